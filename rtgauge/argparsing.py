"""rtgauge's argument parser: argparse with a 'did you mean' for a mistyped command or
option, the usage of the subcommand the mistake was made in, and a closed stdout
reaching the entry point (exit 141) instead of being swallowed. Used by the command
line (rtgauge.cli) and by `rtgauge hil`'s own parsers."""

from __future__ import annotations

import argparse
import difflib
import sys

from rtgauge.config import DB_HELP
from rtgauge.errors import EXIT_USAGE


def suggestion(word: str, choices) -> str:
    """' (did you mean --duration?)' for a near miss among choices, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse, with a 'did you mean' for a mistyped command or option, and the usage
    of the subcommand the mistake was made in (subparsers are made of this class too)."""

    def error(self, message: str):
        if "invalid choice:" in message:
            word = message.split("invalid choice:", 1)[1].split("(", 1)[0].strip().strip("'\"")
            choices = [c for a in self._actions if a.choices for c in a.choices]
            message += suggestion(word, choices)
        elif message.startswith("unrecognized arguments:"):
            words = message.split(":", 1)[1].split()
            first = next((w for w in words if w.startswith("-")), None)
            if first:
                message += suggestion(first.split("=", 1)[0], self.option_strings())
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _print_message(self, message, file=None):
        # argparse swallows a failed write; a closed stdout must reach the entry point (141)
        if message:
            (file or sys.stderr).write(message)

    def option_strings(self) -> list[str]:
        return [o for a in self._actions for o in a.option_strings]


def add_db_option(p, help: str | None = None) -> None:
    """--db, declared once for every command that stores or reads runs (the command line's
    kit, rtgauge/cli/common.py, and `rtgauge hil sustained --store`): one name, one
    metavar, one help (config.DB_HELP) unless a command's database means another thing
    (a lab's shared one) or is no longer read (argparse.SUPPRESS)."""
    p.add_argument("--db", metavar="URL", default=None, help=DB_HELP if help is None else help)
