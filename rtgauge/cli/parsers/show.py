"""`rtgauge show`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/show.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_budget_options, add_db_option, add_format_option


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "show", help="list the stored runs, or show one",
        description="Without RUN, list the runs in the results database; with RUN (an id or "
        "'latest'), show that run's system, doctor warnings and measurements.")
    p.add_argument("run", nargs="?", metavar="RUN", help="a run id, or 'latest'")
    add_db_option(p)
    p.add_argument("--json", action="store_true", help="print the data as JSON instead of tables")
    add_budget_options(p, "with RUN: the job's worst wake-up latency, µs; adds the verdict (yes / no / not enough "
                       "evidence, under \"verdict\" in --json) and exits with its status (0, 3, 4 or 5); "
                       "default: the config file's [budget]")
    add_format_option(p)
