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

import re

from rich.console import Console
from rich.markup import escape as rich_escape

# C0 except tab and newline, DEL, C1, and the bidi embedding/override/isolate controls
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
DEFAULT_LIMIT = 4000


def _visible(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text, limit: int | None = DEFAULT_LIMIT) -> str:
    """text (any value) as a string safe for a terminal, at most `limit` characters
    (the rest is summarised as '… (N more characters)')."""
    s = text if isinstance(text, str) else str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit] + f"… ({len(s) - limit:,} more characters)"
    return _CONTROL.sub(_visible, s)


def markup(text, limit: int | None = DEFAULT_LIMIT) -> str:
    """printable() text, escaped for rich markup (a name like `x[/]` prints as itself)."""
    return rich_escape(printable(text, limit))


class SafeConsole(Console):
    """A rich Console that removes control characters from every string it renders
    (rtgauge's own markup holds none, so only data is affected)."""

    def render_str(self, text: str, *args, **kwargs):
        return super().render_str(_CONTROL.sub(_visible, text), *args, **kwargs)


def say(text="", **kwargs) -> None:
    """print() for plain (non-rich) output of data."""
    print(printable(text, None), **kwargs)
