"""Text safe for a terminal: every C0 and C1 control character (ESC, BEL, CSI, ...),
DEL and the Unicode bidirectional overrides shown as a visible \\xNN / \\uNNNN escape,
and the length bounded. The bottom of every layer (no rtgauge import), so that the
error path (rtgauge.errors) and the report's console (rtgauge.report.safe) share it."""

from __future__ import annotations

import re

# C0 except tab and newline, DEL, C1, and the bidi embedding/override/isolate controls
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
DEFAULT_LIMIT = 4000


def visible(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text, limit: int | None = DEFAULT_LIMIT) -> str:
    """text (any value) as a string safe for a terminal, at most `limit` characters
    (the rest is summarised as '… (N more characters)')."""
    s = text if isinstance(text, str) else str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit] + f"… ({len(s) - limit:,} more characters)"
    return CONTROL.sub(visible, s)
