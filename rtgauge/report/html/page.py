"""The page's building blocks: the style sheet, escaping, number formats, and the
section, flag, figure and column-header pieces every section uses."""

from __future__ import annotations

import re
from html import escape, unescape

from rtgauge.analysis.run.rows import system_label
from rtgauge.report.numbers import us_fixed
from rtgauge.report.svg import NARROW_BELOW
from rtgauge.records import Run

# Below this viewport width a table stacks into one block per row, each value under its
# column's name, so no number hides off to the right on a phone (responsive_tables).
STACK_BELOW = 760

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em 2em;color:#222;max-width:90em}
h1{font-size:1.7em;margin-bottom:.2em}h2{font-size:1.35em;border-bottom:2px solid #333;margin-top:2.2em}
h3{font-size:1.1em;margin-top:1.6em}h4{font-size:1em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#eee}td.l,th.l{text-align:left}.wide{overflow-x:auto;max-width:100%}
.bad{color:#b71c1c;font-weight:bold}.warn{color:#a64500}.ok{color:#1b5e20}.info{color:#555}
tr.diff td,tr.diff th{background:#fff3cd}tr.diff th::after{content:' ≠';color:#b71c1c}
.note{color:#555;font-size:.9em;margin:.2em 0 1em}.flag{background:#b71c1c;color:#fff;padding:0 .4em;border-radius:3px;font-size:.85em}
.stars{font-size:1.3em;letter-spacing:.05em;white-space:nowrap}.cmd{font-family:monospace;font-size:.85em;word-break:break-all}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,590px),1fr));gap:1em;align-items:start}
.fig{margin:0;min-width:0}.fig p{max-width:620px}
svg.plot{background:#fff;border:1px solid #ccc;display:block;max-width:100%;height:auto}svg.heat{max-width:none}
.pw{display:block}.pn{display:none}.wide:focus{outline:2px solid #0d47a1}
details{margin:.6em 0}summary{cursor:pointer;font-weight:bold}.verdict{border:2px solid #333;padding:.3em 1em;margin:.6em 0}
.answer{font-size:1.15em;font-weight:bold}small{color:#555}
nav a{margin-right:1em}.ref{background:#f6f6f6;font-size:.88em;text-align:left;white-space:nowrap}
"""
CSS += f"""@media (max-width:{NARROW_BELOW - 0.02}px){{.pw{{display:none}}.pn{{display:block}}}}
@media (max-width:{STACK_BELOW - 0.02}px){{body{{margin:.8em}}
table.stack,table.stack>tbody,table.stack tr,table.stack td,table.stack th,table.stack caption{{display:block}}
table.stack{{margin:.5em 0}}table.stack tr:first-child{{display:none}}
table.stack tr{{border:1px solid #bbb;margin:0 0 .6em}}
table.stack td,table.stack th{{border:none;border-top:1px solid #e4e4e4;text-align:left;display:flow-root;
padding:3px 6px 3px 147px}}table.stack tr>:first-child{{border-top:none}}table.stack th{{padding-left:6px}}
table.stack td::before{{float:left;width:134px;margin-left:-140px;font-weight:bold;color:#444;text-align:left;
white-space:normal}}}}
"""


def e(value) -> str:
    """Escape anything for HTML text and attribute values."""
    return escape("–" if value is None else str(value), quote=True)


def num(v, digits: int = 1, unit: str = "") -> str:
    if v is None:
        return "–"
    return f"{v:,.{digits}f}{unit}"


def us(ns, digits: int = 1) -> str:
    return us_fixed(ns, digits)


def section(ident: str, heading: str, body: str) -> str:
    return f"<section id='{ident}' class='section'><h2>{e(heading)}</h2>{body}</section>"


def flag(text: str) -> str:
    return f" <span class='flag'>{e(text)}</span>"


def run_headers(runs: list[Run], first: str) -> str:
    return f"<tr><th class='l'>{e(first)}</th>" + "".join(f"<th class='l'>{e(system_label(r))}</th>" for r in runs) + "</tr>"


def figure(svg: str, caption: str) -> str:
    return f"<figure class='fig'>{svg}<p class='note'>{caption}</p></figure>"


TABLE = re.compile(r"(<div class='wide'>)?<table>(.*?)</table>", re.S)
ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.S)
CELL = re.compile(r"<(t[dh])\b([^>]*)>", re.S)
HEADING = re.compile(r"<h[2-4][^>]*>(.*?)</h[2-4]>", re.S)


def text_of(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]*>", " ", fragment)).split())


def css_string(text: str) -> str:
    """A CSS string of any text: every character but letters, digits and spaces escaped."""
    return '"' + "".join(c if c.isalnum() or c == " " else f"\\{ord(c):x} " for c in text) + '"'


def cell_labels(cells: list[tuple[str, str]], heads: list[str]) -> list[str] | None:
    """The column names of a row's cells, a cell across several columns named by all of
    them ("a / b"); None where the row does not line up with the header (a rowspan, or
    more or fewer columns)."""
    labels, col = [], 0
    for _, attrs in cells:
        if "rowspan" in attrs:
            return None
        span = re.search(r"colspan=['\"]?(\d+)", attrs)
        n = int(span.group(1)) if span else 1
        labels.append(" / ".join(h for h in heads[col:col + n] if h))
        col += n
    return labels if col == len(heads) else None


def responsive_tables(html: str) -> tuple[str, str]:
    """Every table of the page in a region that scrolls sideways on its own (focusable,
    named, so a keyboard reaches what a narrow screen hides), and every table whose rows
    line up with its header row (cell_labels) also stackable: below
    STACK_BELOW px each row becomes a block of "column: value" lines. The labels are
    CSS generated content, one rule per column, returned as the second value for the
    page's style sheet; the cells' markup stays as the sections wrote it."""
    rules: list[str] = []
    count = 0

    def one(m: re.Match) -> str:
        nonlocal count
        count += 1
        body = m.group(2)
        rows = ROW.findall(body)
        head = CELL.findall(rows[0]) if rows else []
        heads = [text_of(c) for c in re.split(r"<t[dh]\b[^>]*>", rows[0])[1:]] if rows else []
        labels = [cell_labels(CELL.findall(r), heads) for r in rows[1:]]
        stack = (bool(rows) and all(tag == "th" and "span=" not in attrs for tag, attrs in head)
                 and all(x is not None for x in labels))
        cls = ""
        if stack:
            cls = f" class='stack st{count}'"
            rules.extend(f".st{count} td:nth-child({k})::before{{content:{css_string(label)}}}"
                         for k, label in enumerate(heads, 1) if label)
            for r, row in enumerate(labels, 2):         # a row with cells across columns: its own names
                rules.extend(f".st{count} tr:nth-child({r}) td:nth-child({k})::before{{content:{css_string(label)}}}"
                             for k, label in enumerate(row, 1) if label != (heads[k - 1] if k <= len(heads) else None))
        caption = re.search(r"<caption>(.*?)</caption>", body, re.S)
        before = HEADING.findall(html, 0, m.start())
        name = text_of(caption.group(1)) if caption else (text_of(before[-1]) if before else "table")
        name += " (table: " + ", ".join(heads[:3]) + (", …" if len(heads) > 3 else "") + ")"
        region = f"<div class='wide' tabindex='0' role='region' aria-label='{e(name)}'>"
        return f"{region}<table{cls}>{body}</table>" + ("" if m.group(1) else "</div>")

    out = TABLE.sub(one, html)
    css = f"@media (max-width:{STACK_BELOW - 0.02}px){{{''.join(rules)}}}" if rules else ""
    return out, css
