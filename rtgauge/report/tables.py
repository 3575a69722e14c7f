"""How a table reaches the terminal: one rule for every table rtgauge prints.

- Off a terminal (or with `--format tsv`) a table is plain tab-separated text a script
  can read: its title as a `# ` line, a header line, one line a row.
- On a terminal a number is never cut and a word is never split: a cut number misleads
  (1,638 µs printed as `163…` reads as 163), a split header (`ser` / `ies`) reads as
  two. The numeric columns (right-justified, the convention of every table rtgauge
  prints) keep each cell's figures on one line (a ` (note)` after them may wrap); text
  cells and headers wrap between words only.
- When that does not fit the terminal's width, the table drops its outer frame; when
  even that does not fit, it is printed stacked: one
  block per row, the row's first cell as the block's heading and every other cell on
  its own line under its column's name. Nothing is ever drawn wider than the terminal."""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from rtgauge.printable import CONTROL, visible


def _plain(cell) -> str:
    """A cell as the text it shows: markup removed, its own line breaks kept."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except Exception:      # not markup after all: show it as it is
            return cell
    return str(cell)


def cell_text(cell) -> str:
    """A cell as plain text on one line: markup removed, tabs and line breaks as spaces."""
    return " ".join(_plain(cell).replace("\t", " ").split())


def as_text(cell) -> Text:
    """A cell as rich Text with its markup applied (control characters made visible,
    as SafeConsole does for every string it renders)."""
    if isinstance(cell, Text):
        return cell.copy()
    if isinstance(cell, str):
        cell = CONTROL.sub(visible, cell)
        try:
            return Text.from_markup(cell)
        except Exception:
            return Text(cell)
    return Text(str(cell))


def rows_of(table: Table) -> list[list]:
    n = max((len(c._cells) for c in table.columns), default=0)
    return [[c._cells[i] if i < len(c._cells) else "" for c in table.columns] for i in range(n)]


def table_tsv(table: Table) -> str:
    """The table as TSV: its title as a `# ` line, a header line, one line a row."""
    lines = []
    if table.title:
        lines.append(f"# {cell_text(table.title)}")
    lines.append("\t".join(cell_text(c.header) for c in table.columns))
    for row in rows_of(table):
        lines.append("\t".join(cell_text(c) for c in row))
    return "\n".join(lines)


def numeric(column) -> bool:
    """A right-justified column holds figures: each cell stays on one line."""
    return column.justify == "right"


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def _longest_line(text: str) -> int:
    return max((cell_len(line.rstrip()) for line in text.splitlines()), default=0)


def _figures_width(cell: str) -> int:
    """The narrowest a figure cell may be: its figures (the text before a ` (note)`, a
    bracket that opens with a letter) on one line; the note may wrap between its words.
    `13.5 (1.7 ± 0.2)` is figures throughout and stays whole."""
    widest = 0
    for line in cell.splitlines() or [""]:
        m = NOTE.search(line)
        figures, note = (line[:m.start()], line[m.start():]) if m else (line, "")
        widest = max(widest, cell_len(figures.rstrip()), _longest_word(note))
    return widest


NOTE = re.compile(r" \((?=[^\W\d])")


def column_limits(table: Table) -> list[tuple[int, int]]:
    """Per column, padding included: the narrowest it may be (a figure cell whole on one
    line, no word of a text cell or of the header split) and the widest it needs."""
    limits = []
    for i, column in enumerate(table.columns):
        pad = table._get_padding_width(i)
        cells = [_plain(c) for c in column._cells]
        header = _plain(column.header) if table.show_header else ""
        if numeric(column):
            low = max([_figures_width(c) for c in cells] + [_longest_word(header)])
        else:
            low = max([_longest_word(c) for c in cells] + [_longest_word(header)])
        high = max([_longest_line(c) for c in cells] + [_longest_line(header), low])
        limits.append((max(low, 1) + pad, max(high, 1) + pad))
    return limits


def fit_widths(table: Table, width: int) -> list[int] | None:
    """Column widths (padding included) that fit WIDTH with nothing cut, or None when the
    table cannot fit and must be stacked. The widest column that may still narrow gives
    up a character at a time, so text wraps before a header does."""
    limits = column_limits(table)
    room = width - table._extra_width
    if sum(low for low, _ in limits) > room:
        return None
    widths = [high for _, high in limits]
    while sum(widths) > room:
        i = max((i for i in range(len(widths)) if widths[i] > limits[i][0]), key=lambda i: widths[i])
        widths[i] -= 1
    return widths


def fit(table: Table, width: int) -> bool:
    """Fixes the table's column widths to fit WIDTH, first with its outer frame, then
    without it (no outer border or edge padding); False when it must be stacked."""
    widths = fit_widths(table, width)
    if widths is None and table.box and (table.show_edge or table.pad_edge):
        frame = table.show_edge, table.pad_edge
        table.show_edge = table.pad_edge = False
        widths = fit_widths(table, width)
        if widths is None:
            table.show_edge, table.pad_edge = frame
    if widths is None:
        return False
    set_widths(table, widths)
    return True


def set_widths(table: Table, widths: list[int]) -> None:
    """Fixes each column at its width: rich then wraps between words and cuts nothing."""
    for i, (column, w) in enumerate(zip(table.columns, widths)):
        column.width = w - table._get_padding_width(i)
        column.min_width = column.max_width = None
        column.no_wrap = False
        column.overflow = "fold"
        column.ratio = None


def heading_columns(table: Table) -> int:
    """How many leading columns name a row: the text columns before the first figure
    column (at least the first column; only the first when no figure column follows)."""
    n = 0
    while n < len(table.columns) and not numeric(table.columns[n]):
        n += 1
    return n if 0 < n < len(table.columns) else 1


def print_stacked(console, table: Table) -> None:
    """One block per row: the row's naming cells as its heading, then `name: value`
    for every other column, each on its own line."""
    if table.title:
        console.print(as_text(table.title) if isinstance(table.title, str) else table.title)
    names = [cell_text(c.header) for c in table.columns]
    k = heading_columns(table)
    for row in rows_of(table):
        parts = [as_text(c) for c in row[:k] if cell_text(c)]
        head = Text(" · ").join(parts) if parts else Text("-")
        head.stylize("bold")
        console.print(head)
        for name, cell in zip(names[k:], row[k:]):
            line = Text("  ")
            if name:
                line.append(f"{name}: ", style="dim")
            line.append_text(as_text(cell))
            console.print(line)
