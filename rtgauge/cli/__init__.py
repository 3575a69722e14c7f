"""The rtgauge command line: one module a subcommand, each with register().

Start-up stays light: the modules here import only argparse and rtgauge's own small
modules at their top; numpy, scipy, SQLAlchemy and rich are imported by the function
that uses them, so `rtgauge --help` and a mistyped option answer at once
(tests/test_cli_startup.py checks it, bench/startup.py times it)."""

from __future__ import annotations

import argparse
import signal
import sys
import warnings

from rtgauge import __version__
from rtgauge.argparsing import Parser
from rtgauge.cli.common import subcommand_parsers
from rtgauge.errors import EXIT_USAGE, UserError, run_reporting_errors

COMMAND_MODULES = ("run", "show", "doctor", "engine", "tune", "report", "compare", "pwcet", "export",
                   "importing", "hil", "lab", "completion")


def build_parser() -> Parser:
    import importlib

    parser = Parser(
        prog="rtgauge",
        description="Measure whether this system can carry a real-time job, store the "
        "result and compare it with other systems and the published figures.",
        epilog="Exit statuses: 0 ok, 1 failed, 2 bad input, 3 gate tripped, 4 undecided, "
        "5 gate read an incomplete measurement, 130 interrupted, 141 output closed "
        "(docs/exit-status.md). The database is --db, else $RTGAUGE_DB, else the config "
        "file's db (docs/config.md).",
    )
    parser.add_argument("--version", action="version", version=f"rtgauge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"rtgauge.cli.{name}").register(sub)
    from rtgauge.cli.examples import add_examples
    add_examples(parser)
    return parser


def parser_used(parser: Parser, args: argparse.Namespace) -> Parser:
    """The deepest subcommand parser that parsed args (`lab run`, `show`, ...)."""
    found = parser
    for path, child in subcommand_parsers(parser):
        if (getattr(args, "command", None), getattr(args, "lab_action", None))[:len(path)] == path:
            found = child
    return found


def parse(parser: Parser, argv: list[str]) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser_used(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def dispatch(argv: list[str]) -> int:
    remove_abandoned_cpusets()
    # `rtgauge engine ...` passes everything after it to the engine untouched.
    if argv[:1] == ["engine"]:
        from rtgauge.cli.engine import passthrough

        return passthrough(argv[1:])
    # `rtgauge hil veth ...` passes the engine's hil options on untouched, the same way.
    if argv[:1] == ["hil"]:
        from rtgauge.cli.hil import passthrough as hil

        return hil(argv[1:])
    parser = build_parser()
    args = parse(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    terminate_like_interrupt()
    # numpy's and scipy's RuntimeWarnings (overflow, invalid value) printed beside a result or
    # a sentence say nothing the result does not: a figure that cannot be computed is absent
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(numpy|scipy)(\.|$)")
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"rtgauge\.analysis")
    return masked_errors(args.func, args)


def terminate_like_interrupt() -> None:
    """SIGTERM and SIGHUP (the terminal or ssh session closed) stop any command as Ctrl-C
    does (KeyboardInterrupt), so its `finally` blocks run: temporary trees and cpuset
    groups are removed, runs marked. A run installs its own handler for the time it
    measures (rtgauge/plan/execute.py). A signal the caller ignores (`nohup`) stays
    ignored."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, stop)


def remove_abandoned_cpusets() -> None:
    """The cpuset groups of a partitioned run whose rtgauge died (SIGKILL) are removed by
    the next command of any kind, one line each on stderr, as abandoned runs are marked
    (docs/loads.md)."""
    from rtgauge.loads.partition import remove_abandoned_cpusets as remove
    for group in remove():
        print(f"rtgauge: removed the cpuset group {group} left by an rtgauge (pid "
              f"{group.name.rpartition('-')[2]}) that ended without removing it.", file=sys.stderr)


def masked_errors(func, args):
    """func(args); a sentence that names a URL never shows its password (rtgauge/redact.py)."""
    try:
        return func(args)
    except UserError as e:
        from rtgauge.redact import mask_text
        e.args = (mask_text(str(e)),)
        raise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # One place for every command: a user error is one sentence, Ctrl-C is 130, and a
    # closed stdout (`| head`) ends quietly with 141, help and usage errors included.
    return run_reporting_errors(lambda: dispatch(argv))


if __name__ == "__main__":
    sys.exit(main())
