"""The rtgauge command line: one module a subcommand, each with register()."""

from __future__ import annotations

import argparse
import sys

from rtgauge import __version__
from rtgauge.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    from rtgauge.cli import compare, doctor, engine, export, importing, report, run, show
    from rtgauge.cli import tune

    parser = argparse.ArgumentParser(
        prog="rtgauge",
        description="Measure whether this system can carry a real-time job, store the "
        "result and compare it with other systems and the published figures.",
    )
    parser.add_argument("--version", action="version", version=f"rtgauge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (run, show, doctor, engine, tune, report, compare, export, importing):
        module.register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # `rtgauge engine ...` passes everything after it to the engine untouched.
    if argv[:1] == ["engine"]:
        from rtgauge.cli.engine import passthrough

        return passthrough(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run_reporting_errors(lambda: args.func(args))


def run_reporting_errors(command) -> int:
    """command()'s exit status; a user error is its one sentence on stderr and its
    status, Ctrl-C is 130. Shared by every entry point (rtgauge, python -m rtgauge.hil)."""
    try:
        return int(command() or 0)
    except UserError as e:
        from rtgauge.report.safe import printable
        print(f"rtgauge: {printable(e)}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("rtgauge: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
