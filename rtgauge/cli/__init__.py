"""The rtgauge command line: one module a subcommand, each with register()."""

from __future__ import annotations

import argparse
import sys

from rtgauge import __version__
from rtgauge.errors import EXIT_HELP, run_reporting_errors


def build_parser() -> argparse.ArgumentParser:
    from rtgauge.cli import compare, doctor, engine, export, importing, report, run, show
    from rtgauge.cli import hil, lab, pwcet, tune

    parser = argparse.ArgumentParser(
        prog="rtgauge",
        description="Measure whether this system can carry a real-time job, store the "
        "result and compare it with other systems and the published figures.",
        epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rtgauge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (run, show, doctor, engine, tune, report, compare, pwcet, export, importing, hil, lab):
        module.register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # `rtgauge engine ...` passes everything after it to the engine untouched.
    if argv[:1] == ["engine"]:
        from rtgauge.cli.engine import passthrough

        return passthrough(argv[1:])
    # `rtgauge hil veth ...` passes the engine's hil options on untouched, the same way.
    if argv[:1] == ["hil"]:
        from rtgauge.cli.hil import passthrough as hil

        return hil(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run_reporting_errors(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
