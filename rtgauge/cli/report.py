"""`rtgauge report [RUN ...] -o FILE`: the self-contained HTML report of stored runs
(default: the latest run)."""

from __future__ import annotations

import sys
import time

from rtgauge import safefile
from rtgauge.analysis.run.verdict import make_budget
from rtgauge.analysis.studies.conclusions import check_conclusions, summary_line
from rtgauge.analysis.studies.published import studies
from rtgauge.cli.common import budget_options, check_writable, read_runs
from rtgauge.printable import printable
from rtgauge.report.output import default_output, write_html


def cmd_report(args) -> int:
    options = budget_options(args)
    check_writable("-o", args.output)
    if options.get("budget_us") is not None and "budget" not in options:
        options["budget"] = make_budget(options["budget_us"])
    if args.trend:
        options["trend"] = True
    runs = read_runs(args.db, args.runs)
    path = args.output or default_output("rtgauge-report", runs)
    t0 = time.monotonic()
    write_html(path, runs, **options)
    stream = sys.stderr if safefile.stream_fd(path) == 1 else sys.stdout
    print(f"Report of {len(runs)} run{'s' if len(runs) != 1 else ''} written to {printable(path, 120)} "
          f"({time.monotonic() - t0:.2f} s).", file=stream)
    found = studies(runs)
    if found:
        print(f"The studies' {summary_line(check_conclusions(runs, {st.source for st, _ in found}))} "
              "(the report's published section says which and why).", file=stream)
    return 0
