"""`rtgauge engine`'s parser: its line in the overview and in shell completion. The command
passes everything after `engine` to the engine unparsed (rtgauge/cli/engine.py, reached by
the registry's dispatch before any parsing; the engine answers --help)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("engine", help="run the measurement engine directly (rtgauge engine --list)",
                       add_help=False)
    p.add_argument("args", nargs="*")
