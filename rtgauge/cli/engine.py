"""`rtgauge engine TEST ...`: run the engine built with the package, untouched."""

from __future__ import annotations

import os
import sys

from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("engine", help="run the measurement engine directly (rtgauge engine --list)",
                       add_help=False)
    p.add_argument("args", nargs="*")
    p.set_defaults(func=lambda a: passthrough(a.args))


def passthrough(args: list[str]) -> int:
    """Replace this process with the engine so signals and exit status pass through."""
    try:
        exe = engine_path()
    except UserError as e:
        print(f"rtgauge: {e}", file=sys.stderr)
        return e.exit_status
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe, *args])
    return 127  # not reached
