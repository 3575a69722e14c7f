"""docs/performance.md is shared by several benchmarks; each owns one or more
'## ' sections and replaces only those, so running one bench keeps the others'."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_MD = ROOT / "docs" / "performance.md"
TITLE = "# Performance of rtgauge itself"


def replace_section_text(text: str, title: str, body: str) -> str:
    """`text` with the section '## title' (up to the next '## ' heading) replaced by
    body, or with the section appended when it is not there."""
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = f"## {title}\n\n{body.strip()}\n\n"
    if pattern.search(text):
        return pattern.sub(lambda _m: new, text, count=1)
    return text.rstrip() + "\n\n" + new


def write_section(title: str, body: str, path: Path = PERFORMANCE_MD) -> None:
    text = path.read_text() if path.exists() else TITLE + "\n"
    path.write_text(replace_section_text(text, title, body))
