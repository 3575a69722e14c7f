"""How a table reaches the terminal: a number is never cut, and off a terminal (or on
request) a table is plain tab-separated text a script can read.

A cut number misleads (1,638 µs printed as `163…` reads as 163), so the numeric
columns (right-justified, the convention of every table rtgauge prints) never wrap
or shrink: the text columns fold first, and when even that does not fit, the table is
drawn wider than the terminal (the terminal wraps the line, the digits stay whole)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def cell_text(cell) -> str:
    """A cell as plain text: markup removed, tabs and line breaks as spaces."""
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        try:
            text = Text.from_markup(cell).plain
        except Exception:      # not markup after all: show it as it is
            text = cell
    else:
        text = str(cell)
    return " ".join(text.replace("\t", " ").split())


def table_tsv(table: Table) -> str:
    """The table as TSV: its title as a `# ` line, a header line, one line a row."""
    lines = []
    if table.title:
        lines.append(f"# {cell_text(table.title)}")
    lines.append("\t".join(cell_text(c.header) for c in table.columns))
    rows = max((len(c._cells) for c in table.columns), default=0)
    for i in range(rows):
        lines.append("\t".join(cell_text(c._cells[i]) if i < len(c._cells) else "" for c in table.columns))
    return "\n".join(lines)


def keep_numbers_whole(table: Table) -> None:
    for column in table.columns:
        if column.justify == "right":
            column.no_wrap = True          # a number is one word: it stays on one line, whole
        elif column.overflow == "ellipsis":
            column.overflow = "fold"       # a long word of text folds rather than ending in …


FOLDED_TEXT_MIN = 8   # a text column folds down to this many characters before the table widens


def width_needed(console, table: Table) -> int:
    """The narrowest the table can be drawn with every number whole: each numeric column
    as wide as its widest cell, each text column folded down to FOLDED_TEXT_MIN."""
    wide = console.options.update_width(1 << 16)
    total = 0
    for i, column in enumerate(table.columns):
        pad = table._get_padding_width(i)
        if column.no_wrap:
            total += max((len(cell_text(c)) for c in column._cells), default=0) + pad
        else:
            total += min(table._measure_column(console, wide, column).minimum, FOLDED_TEXT_MIN + pad)
    borders = (len(table.columns) + 1) if table.box and table.show_edge else max(len(table.columns) - 1, 0)
    return total + borders
