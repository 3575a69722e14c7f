"""`rtgauge lab`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/lab.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_db_option
from rtgauge.lab.emulate import command as emulate


def register(sub) -> None:
    p = sub.add_parser("lab", help="run one profile on many boards at once (docs/lab.md)",
                       description="Measure a lab of boards: ssh:// targets and labgrid places (docs/lab.md).")
    actions = p.add_subparsers(dest="lab_action", metavar="ACTION")
    r = actions.add_parser("run", help="run the lab's profile on every target at once and report them side by side",
                           description="Run LAB.toml's profile on each of its targets concurrently (one "
                           "`rtgauge run --target` each), store every run in the lab's database, hold labgrid "
                           "places for the run, and write one report of all the runs.")
    r.add_argument("lab", metavar="LAB.toml", help="the lab file (docs/lab.md)")
    add_db_option(r, "the shared PostgreSQL database (postgresql://USER@HOST/DB); default: the lab file's db")
    r.add_argument("--report", metavar="FILE", default=None,
                   help="the HTML report to write (default: the lab file's report, else rtgauge-lab-NAME.html here)")
    r.add_argument("--no-report", action="store_true", help="do not write an HTML report")
    r.add_argument("--logs", metavar="DIR", default=None,
                   help="where each target's output is kept, one file a target (default: rtgauge-lab-NAME-logs here)")
    r.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="an absolute rule checked on every job of every target's run, as `rtgauge run --fail-on` "
                   "(e.g. 'max_latency>100us'); exit status 3 when one is broken")
    r.add_argument("--junit", metavar="FILE",
                   help="write JUnit XML: a test suite per target, a test case per job and rule (and the verdict "
                   "when the lab's profile has a [budget])")
    emulate.register(actions)
