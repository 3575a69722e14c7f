"""`rtgauge compare`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/compare.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

import argparse

from rtgauge.cli.common import add_db_option, add_format_option
from rtgauge.defaults import REGRESSION_ALPHA as ALPHA
from rtgauge.errors import EXIT_HELP


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare stored runs side by side and show regressions",
                       epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Show runs side by side and what got worse in each later run compared "
                       "with the first (the baseline). With --fail-on, exit with status 3 when a rule trips.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="two or more run ids (the first is the baseline), or ranges")
    add_db_option(p)
    p.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="e.g. 'max_latency>+20%%', 'micro_avg>+10%%', 'avg_latency>+5us', 'misses>0', "
                   "'tire_max_masses<-10%%' (repeatable); a change trips only when significant; exit status 3 "
                   "when one trips or has nothing valid to check, 4 (undecided) when a change beyond a rule "
                   "is within the noise")
    p.add_argument("--junit", metavar="FILE", default=None,
                   help="write the --fail-on rules' outcome as JUnit XML: a test suite per later run, a test case "
                   "per job and rule")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="also write an HTML report with the regressions")
    p.add_argument("--all", action="store_true", help="list every compared figure, not only the changed ones")
    p.add_argument("--json", action="store_true",
                   help="print every compared figure (call, size, interval, p and q values) as JSON, no tables")
    p.add_argument("--alpha", type=float, default=ALPHA, metavar="Q",
                   help="false discovery rate of the better/worse calls over all figures of a comparison "
                   "(Benjamini-Hochberg; default 0.05)")
    p.add_argument("--pwcet", action="store_true",
                   help="also put the probable worst cases (docs/pwcet.md) of each latency measurement side by "
                   "side, with their 95%% intervals and whether B's is significantly worse (seconds per pair)")
    p.add_argument("--exceedance", type=float, default=None, metavar="P",
                   help="with --pwcet: per-cycle probability of the probable worst case (default 1e-9)")
    p.add_argument("--budget-us", type=float, default=None, metavar="US",
                   help="worst-case latency allowed for a hard real-time rating (default 100)")
    add_format_option(p)
