"""`rtgauge doctor`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/doctor.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_format_option


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check this system for what spoils real-time measurements, and how to fix it",
        description="Check privileges, RT throttling, governor, SMT, isolated CPUs, idle states, "
        "preemption model, clocksource, swap, THP, irqbalance and tracer availability; "
        "each gets a status (ok/info/warn/bad) and what to change. Exit status 0: it is advice.",
    )
    p.add_argument("--json", action="store_true", help='print {"facts": ..., "checks": [...]} as JSON')
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a check is bad")
    p.add_argument(
        "--root", default="/", metavar="DIR",
        help="read /proc, /sys and /etc under DIR instead of / (a copied or fake tree)",
    )
    p.add_argument(
        "--target", default=None, metavar="ssh://[user@]host[:port]",
        help="check that machine over SSH: its /proc, /sys and /etc are read over the connection",
    )
    add_format_option(p)
