"""The rtgauge command line: a registry of commands, each a parser and a handler.

The registry (COMMANDS) knows each command by one line: its name, its parser module, its
handler and its one-line help. `rtgauge --help` and a mistyped command are answered from
those lines alone. A command's parser module (rtgauge/cli/parsers/NAME.py: register()
adds its options and help) is imported when that command is on the command line, so its
own --help and its usage errors load no more than the options need; its handler
("module:function", rtgauge/cli/NAME.py, whose module imports the implementation at its
top, as ordinary Python) is imported once, at dispatch, after the command line parsed.
So neither this module nor a parser module imports anything heavy
(tests/test_cli_startup.py checks which modules each case loads, bench/startup.py
times it); docs/design.md, "Commands load at dispatch", says why this split."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import warnings
from collections.abc import Iterable
from typing import NamedTuple

from rtgauge import __version__, stops
from rtgauge.argparsing import Parser
from rtgauge.cli.common import subcommand_parsers
from rtgauge.cli.examples import add_examples
from rtgauge.errors import EXIT_USAGE, UserError, run_reporting_errors
from rtgauge.loads.partition import remove_abandoned_cpusets as remove_abandoned_groups


class Command(NamedTuple):
    """One registry line: the command's name, the module whose register() adds its parser
    (light: options and help only), the handler run at dispatch ("module:function", the
    implementation's module), and the line `rtgauge --help` shows for it (the same help
    the parser registers: tests/test_cli_startup.py compares them)."""
    name: str
    parser: str
    handler: str
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("run", "rtgauge.cli.parsers.run", "rtgauge.cli.run:cmd_run",
            "measure this system with a profile and store the results"),
    Command("show", "rtgauge.cli.parsers.show", "rtgauge.cli.show:show",
            "list the stored runs, or show one"),
    Command("doctor", "rtgauge.cli.parsers.doctor", "rtgauge.cli.doctor:doctor",
            "check this system for what spoils real-time measurements, and how to fix it"),
    Command("engine", "rtgauge.cli.parsers.engine", "rtgauge.cli.engine:cmd_engine",
            "run the measurement engine directly (rtgauge engine --list)"),
    Command("tune", "rtgauge.cli.parsers.tune", "rtgauge.cli.tune:cmd_tune",
            "apply (and revert) the run-time settings doctor flags"),
    Command("report", "rtgauge.cli.parsers.report", "rtgauge.cli.report:cmd_report",
            "write the HTML report of stored runs"),
    Command("compare", "rtgauge.cli.parsers.compare", "rtgauge.cli.compare:cmd_compare",
            "compare stored runs side by side and show regressions"),
    Command("pwcet", "rtgauge.cli.parsers.pwcet", "rtgauge.cli.pwcet:pwcet",
            "the probable worst-case latency of a run or samples file (extreme value theory)"),
    Command("export", "rtgauge.cli.parsers.export", "rtgauge.cli.export:cmd_export",
            "export a stored run as JSON, CSV or Markdown"),
    Command("import", "rtgauge.cli.parsers.importing", "rtgauge.cli.importing:cmd_import",
            "import results measured elsewhere"),
    Command("hil", "rtgauge.cli.parsers.hil", "rtgauge.cli.hil:cmd_hil",
            "the hil loop across a veth pair, or its sustained-rate sweep (rtgauge hil --help)"),
    Command("lab", "rtgauge.cli.parsers.lab", "rtgauge.cli.lab:cmd_lab",
            "run one profile on many boards at once (docs/lab.md)"),
    Command("completion", "rtgauge.cli.parsers.completion", "rtgauge.cli.completion:cmd_completion",
            "print the shell completion script (bash, zsh or tcsh)"),
)
COMMAND_NAMES = tuple(c.name for c in COMMANDS)


def build_parser(loaded: Iterable[str] | None = None) -> Parser:
    """The command line's parser. The commands named in loaded (every command when None:
    shell completion and the tests walk them all) have their parser module imported and
    registered in full; the others are a bare parser under their registry line, enough
    for the overview and for argparse's 'invalid choice' sentence. No handler is loaded."""
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
    wanted = set(COMMAND_NAMES if loaded is None else loaded)
    for command in COMMANDS:
        if command.name in wanted:
            importlib.import_module(command.parser).register(sub)
        else:
            sub.add_parser(command.name, help=command.help)
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
    # `rtgauge engine ...` passes everything after it to the engine untouched, before any
    # parsing: the command's implementation is imported here, as a handler is at dispatch.
    if argv[:1] == ["engine"]:
        from rtgauge.cli.engine import passthrough
        return passthrough(argv[1:])
    # `rtgauge hil veth ...` passes the engine's hil options on untouched, the same way.
    if argv[:1] == ["hil"]:
        from rtgauge.cli.hil import passthrough as hil
        return hil(argv[1:])
    # the first word is the command (the only options before it are --help and --version)
    parser = build_parser(loaded=argv[:1] if argv[:1] and argv[0] in COMMAND_NAMES else ())
    args = parse(parser, argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    # the command line parsed: now, and only now, the command's implementation loads
    func = handler(args.command)
    terminate_like_interrupt()
    # numpy's and scipy's RuntimeWarnings (overflow, invalid value) printed beside a result or
    # a sentence say nothing the result does not: a figure that cannot be computed is absent
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(numpy|scipy)(\.|$)")
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"rtgauge\.analysis")
    return masked_errors(func, args)


def handler(name: str):
    """The function a registry line names as its handler ("module:function"), its module
    imported now: the one place a command's implementation is loaded."""
    module, _, function = next(c for c in COMMANDS if c.name == name).handler.partition(":")
    return getattr(importlib.import_module(module), function)


def terminate_like_interrupt() -> None:
    """SIGTERM and SIGHUP (the terminal or ssh session closed) stop any command as Ctrl-C
    does (KeyboardInterrupt), so its `finally` blocks run: temporary trees and cpuset
    groups are removed, runs marked. A run installs its own handler for the time it
    measures (rtgauge/plan/execute.py). A signal the caller ignores (`nohup`) stays
    ignored."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, stops.interrupt)


def remove_abandoned_cpusets() -> None:
    """The cpuset groups of a partitioned run whose rtgauge died (SIGKILL) are removed by
    the next command of any kind, one line each on stderr, as abandoned runs are marked
    (docs/loads.md)."""
    for group in remove_abandoned_groups():
        print(f"rtgauge: removed the cpuset group {group} left by an rtgauge (pid "
              f"{group.name.rpartition('-')[2]}) that ended without removing it.", file=sys.stderr)


def masked_errors(func, args):
    """func(args); a sentence that names a URL never shows its password (rtgauge/redact.py)."""
    try:
        return func(args)
    except UserError as e:
        # redact reads URLs with SQLAlchemy's parser: too heavy for the registry, which
        # `rtgauge --help` loads; by now the command's own modules have loaded it
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
