"""The one way text reaches the terminal: every string printed from stored, imported or
user-supplied data loses its terminal control characters here.

A run's strings (host names, job names, errors, notes) may come from another machine
through `rtgauge import`; an ANSI or OSC escape sequence in them would set the window
title, clear the screen or forge output. printable() shows every C0 and C1 control
character (ESC, BEL, CSI, ...), DEL and the Unicode bidirectional overrides as a
visible \\xNN / \\uNNNN escape and bounds the length. SafeConsole applies it to every
string rich renders (print arguments and table cells alike), so a rich table cannot
carry a raw escape either; rich markup in data still needs markup() (rich's escape),
which also makes it printable."""

from __future__ import annotations

import os
import re

from rich.console import Console
from rich.markup import escape as rich_escape
from rich.table import Table

from rtgauge.printable import CONTROL as _CONTROL, DEFAULT_LIMIT, printable, visible as _visible  # noqa: F401
from rtgauge.report.tables import fit, print_stacked, table_tsv


def markup(text, limit: int | None = DEFAULT_LIMIT) -> str:
    """printable() text, escaped for rich markup (a name like `x[/]` prints as itself)."""
    return rich_escape(printable(text, limit))


class SafeConsole(Console):
    """A rich Console that removes control characters from every string it renders
    (rtgauge's own markup holds none, so only data is affected). A table it prints
    keeps its numbers and words whole, stacked when too wide (report/tables.py); with
    plain=True it prints tables as TSV, for scripts."""

    def __init__(self, *args, plain: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.plain = plain

    def render_str(self, text: str, *args, **kwargs):
        return super().render_str(_CONTROL.sub(_visible, text), *args, **kwargs)

    def on_broken_pipe(self) -> None:
        # rich would exit with status 1 here; the entry point ends every command alike (141)
        self.quiet = True
        raise BrokenPipeError

    def print(self, *objects, **kwargs):
        if len(objects) != 1 or not isinstance(objects[0], Table):
            return super().print(*objects, **kwargs)
        table = objects[0]
        if self.plain:       # written as it is: rich would expand the tabs
            self.file.write(_CONTROL.sub(_visible, table_tsv(table)) + "\n")
            return None
        if not fit(table, self.width):   # too wide even with text wrapped: one block per row
            return print_stacked(self, table)
        return super().print(table, **kwargs)


def table_console(fmt: str | None = None, stderr: bool = False) -> SafeConsole:
    """The console a command prints to: tables drawn on a terminal, TSV into a pipe or a
    file, unless FMT ('table' or 'tsv', the commands' --format) says. Off a terminal a
    drawn table is 140 columns wide unless $COLUMNS says."""
    tty = SafeConsole(stderr=stderr).is_terminal
    plain = fmt == "tsv" or (fmt is None and not tty)
    width = None if tty or os.environ.get("COLUMNS", "").isdigit() else 140
    return SafeConsole(stderr=stderr, width=width, highlight=False, plain=plain)


def say(text="", **kwargs) -> None:
    """print() for plain (non-rich) output of data."""
    print(printable(text, None), **kwargs)
