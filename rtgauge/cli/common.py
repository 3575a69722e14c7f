"""The command line's kit, as rtla composes its option macros into each tool's parser:
the options several commands share, declared once here and added by each command's
parser (register() in rtgauge/cli/parsers/NAME.py: --db, --format, the job's budget),
and the small steps every command takes at its edge (opening the database it reads
once, saying which runs were found abandoned, refusing an output path before any work).
Light at import: every command's --help loads it. A command module imports this kit and
the registry (rtgauge/cli/__init__.py) and no other command module (tests/test_layers.py);
what commands share beyond options lives in the layers below (rtgauge/store/reading.py,
rtgauge/report/)."""

from __future__ import annotations

import argparse
import os

from rtgauge import safefile
from rtgauge.argparsing import add_db_option
from rtgauge.errors import UserError
from rtgauge.report.abandoned import tell_abandoned

__all__ = ["add_budget_options", "add_db_option", "add_format_option", "budget_options", "check_report_path",
           "check_writable", "read_runs", "subcommand_parsers", "tell_abandoned"]


def add_format_option(p) -> None:
    """--format: tables drawn for a terminal, TSV for a pipe or a file."""
    p.add_argument("--format", choices=("table", "tsv"), default=None,
                   help="tables drawn for a terminal (table) or as tab-separated values (tsv); "
                   "default: table on a terminal, tsv otherwise")


def add_budget_options(p, budget_help: str, period_help: str = "the job's period, µs",
                       miss_rate_help: str = "the share of cycles allowed later than the budget "
                       "(default: none, hard)") -> None:
    """--budget-us, --period-us, --miss-rate: the job's budget (docs/verdict.md); the
    budget's help says what the command does with it."""
    p.add_argument("--budget-us", type=float, default=None, metavar="US", help=budget_help)
    p.add_argument("--period-us", type=float, default=None, metavar="US", help=period_help)
    p.add_argument("--miss-rate", type=float, default=None, metavar="RATE", help=miss_rate_help)


def budget_options(args) -> dict:
    """The budget a report or a comparison is drawn against: {} when none was given,
    {"budget_us"} for a latency alone, with "budget" (analysis.run.verdict.Budget) when a
    period or a miss rate was given too."""
    if getattr(args, "period_us", None) is not None or getattr(args, "miss_rate", None) is not None:
        # every parser (a command's --help) loads this kit: the verdict (scipy) is imported when used
        from rtgauge.analysis.run.verdict import make_budget
        budget = make_budget(args.budget_us, args.period_us, args.miss_rate)
        return {"budget_us": budget.latency_us, "budget": budget}
    if args.budget_us is None:
        return {}
    if not 1 <= args.budget_us <= 1e7:
        raise UserError(f"--budget-us {args.budget_us:g} is out of range 1..10000000; give the worst-case "
                        "wake-up latency your job tolerates, in µs.")
    return {"budget_us": args.budget_us}


def check_writable(option: str, path: str | None) -> None:
    """A file written at the end (-o) is checked before anything is read or printed, by
    the one writer's rule (rtgauge/safefile.py: a link, device, FIFO or directory refused)."""
    safefile.check_option(option, path, "give a regular file path, - or /dev/stdout")


def check_report_path(args) -> None:
    """run's --report is written after measuring: a path it cannot go to is refused before,
    by the one writer's rule (rtgauge/safefile.py)."""
    if args.no_report or not args.report:
        return
    if len(os.path.basename(args.report).encode(errors="replace")) > 255:
        raise UserError(f"--report {args.report[:80]} is not a file rtgauge can write (its name is longer than "
                        "255 bytes); give a shorter file name or --no-report.")
    safefile.check_option("--report", args.report, "give a regular file path, - or /dev/stdout, or --no-report")


def read_runs(db: str | None, texts: list[str], default_latest: bool = True, documents: bool = False) -> list:
    """The runs a reading command's RUN arguments name (the latest one when none is given
    and default_latest), from the database --db names, opened once
    (store/reading.open_for_reading). The RUN arguments are checked before the database
    is looked at."""
    # every parser (a command's --help) loads this kit: the store (SQLAlchemy) is imported when used
    from rtgauge.store.reading import load_runs, open_for_reading, parse_run_ids
    wanted = parse_run_ids(texts) or (["latest"] if default_latest else [])
    with open_for_reading(db) as store:
        tell_abandoned(store)
        return load_runs(store, wanted, documents)


def subcommand_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) for every command and subcommand below parser, depth first (the
    registry's parse errors, the examples added to each command's help)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield path + (name,), child
                yield from subcommand_parsers(child, path + (name,))
