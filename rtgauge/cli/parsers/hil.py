"""`rtgauge hil`'s parser: its line in the overview and in shell completion. The command
passes everything after `hil` on unparsed (rtgauge/cli/hil.py, reached by the registry's
dispatch before any parsing; rtgauge/hil/command.py answers --help)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("hil", help="the hil loop across a veth pair, or its sustained-rate sweep "
                                   "(rtgauge hil --help)", add_help=False)
    p.add_argument("args", nargs="*")
