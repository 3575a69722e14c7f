"""`rtgauge tune`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/tune.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

import argparse

from rtgauge.cli.common import add_db_option
from rtgauge.units import time_option


def register(sub) -> None:
    p = sub.add_parser("tune", help="apply (and revert) the run-time settings doctor flags")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--apply", action="store_true", help="apply the settings and record the old values")
    what.add_argument("--revert", action="store_true", help="restore exactly what --apply changed")
    what.add_argument("--status", action="store_true", help="show what is applied now")
    p.add_argument("--rt-cpus", default=None, metavar="CPUS",
                   help="the CPUs that will measure; interrupts move off them (default: all but the first)")
    p.add_argument("--state", default=None, metavar="FILE",
                   help="state file, in a directory only you can write (default: /run/rtgauge/tune-state.json)")
    add_db_option(p, argparse.SUPPRESS)   # no longer decides where the state is
    p.add_argument("--rt-throttling-off", type=time_option("s", whole=False), default=None, metavar="SECONDS",
                   help="also switch RT throttling off, for at most SECONDS: a detached watchdog "
                        "switches it back on then, even if rtgauge dies (off by default: throttling "
                        "is the safety net against a runaway RT thread)")
