"""`rtgauge report`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/report.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_budget_options, add_db_option


def register(sub) -> None:
    p = sub.add_parser("report", help="write the HTML report of stored runs",
                       description="Write one self-contained HTML file (plots inline, no network) for the given "
                       "runs side by side; without RUN, the latest run.")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids, ranges such as 3-7, or 'latest'")
    add_db_option(p)
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="the HTML file to write (default: rtgauge-report-RUNS.html here); - or /dev/stdout: "
                   "standard output")
    add_budget_options(p, "the job's worst-case wake-up latency, µs: the report opens with the verdict against it "
                       "(default: a rating against 100 µs, no verdict)")
    p.add_argument("--trend", action="store_true",
                   help="add the trend: max, p99 and the credible worst case of each system and condition over "
                   "the runs' start times, significant changes marked")
