"""`rtgauge export`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/export.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_db_option


def register(sub) -> None:
    p = sub.add_parser("export", help="export a stored run as JSON, CSV or Markdown",
                       description="Write one run: json (everything, for `rtgauge import` on another machine), "
                       "csv (one row per figure) or md (the summary tables).")
    p.add_argument("run", metavar="RUN", help="a run id, or 'latest'")
    add_db_option(p)
    p.add_argument("--format", choices=("json", "csv", "md", "cyclictest"), default="json",
                   help="output format (default json); cyclictest: its -h/--histfile layout, one block per "
                   "latency measurement")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="file to write; - or none: standard output")
    p.add_argument("--measurement", metavar="NAME", default=None,
                   help="with --format cyclictest: the latency measurement to write (NAME@CONDITION as `show` "
                   "lists it); needed when the run has more than one")
