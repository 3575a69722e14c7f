"""`rtgauge hil veth|sustained ...`: the hardware-in-the-loop loop across a veth pair,
and the sustained-rate sweep (docs/hil.md). The command itself is rtgauge.hil.command,
which `python3 -m rtgauge.hil` runs as well."""

from __future__ import annotations

from rtgauge.hil.command import main


def register(sub) -> None:
    p = sub.add_parser("hil", help="the hil loop across a veth pair, or its sustained-rate sweep "
                                   "(rtgauge hil --help)", add_help=False)
    p.add_argument("args", nargs="*")
    p.set_defaults(func=lambda a: passthrough(a.args))


def passthrough(args: list[str]) -> int:
    """`veth` takes the engine's hil options untouched, which argparse cannot pass on;
    main() hands everything after `hil` here before parsing."""
    return main(args, prog="rtgauge hil")
