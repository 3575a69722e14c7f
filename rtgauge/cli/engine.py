"""`rtgauge engine TEST ...`: run the engine built with the package, untouched
(or, with --target ssh://..., an engine built for that target, there)."""

from __future__ import annotations

import os
import sys

from rtgauge.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("engine", help="run the measurement engine directly (rtgauge engine --list)",
                       add_help=False)
    p.add_argument("args", nargs="*")
    p.set_defaults(func=lambda a: passthrough(a.args))


def passthrough(args: list[str]) -> int:
    """Replace this process with the engine so signals and exit status pass through.
    With --target ssh://... first, run it on that target instead (docs/cross.md)."""
    from rtgauge.enginebin import engine_path
    if args[:1] == ["--target"] or (args and args[0].startswith("--target=")):
        target, rest = (args[1] if len(args) > 1 else "", args[2:]) if args[0] == "--target" \
            else (args[0].split("=", 1)[1], args[1:])
        return on_target(target, rest)
    try:
        exe = engine_path()
    except UserError as e:
        print(f"rtgauge: {e}", file=sys.stderr)
        return e.exit_status
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe, *args])
    return 127  # not reached


def on_target(target: str, args: list[str]) -> int:
    """`rtgauge engine --target ssh://[user@]host[:port] TEST ...`: the engine built
    for the target's machine runs there; its document is printed here."""
    import json

    from rtgauge.target import remote

    try:
        if not args or args[0].startswith("-"):
            raise UserError("name the test to run after --target ADDRESS, e.g. "
                            "rtgauge engine --target ssh://root@board latency --duration-s 10.")
        if any(a == "--out" or a.startswith("--out=") for a in args):
            raise UserError("--out is not available with --target; redirect the output instead (> FILE).")
        run = remote.run_engine(target, args)
    except UserError as e:
        print(f"rtgauge: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print(f"rtgauge: interrupted before the engine ran on {target}; nothing was measured.", file=sys.stderr)
        return 130
    if run.stderr:
        print(run.stderr, file=sys.stderr)
    if run.document is not None:
        print(json.dumps(run.document))
    return run.status
