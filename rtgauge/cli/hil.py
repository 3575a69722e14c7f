"""`rtgauge hil veth|sustained ...`: the hardware-in-the-loop loop across a veth pair,
and the sustained-rate sweep (docs/hil.md). The command itself is rtgauge.hil.command,
which `python3 -m rtgauge.hil` runs as well."""

from __future__ import annotations

from rtgauge.hil.command import main


def cmd_hil(args) -> int:
    """The registry's handler; `rtgauge hil ...` reaches passthrough() before any parsing."""
    return passthrough(args.args)


def passthrough(args: list[str]) -> int:
    """`veth` takes the engine's hil options untouched, which argparse cannot pass on;
    main() hands everything after `hil` here before parsing."""
    return main(args, prog="rtgauge hil")
