"""The page's building blocks: the style sheet, escaping, number formats, and the
section, flag, figure and column-header pieces every section uses."""

from __future__ import annotations

from html import escape

from rtgauge.analysis import system_label
from rtgauge.report.numbers import us_fixed
from rtgauge.records import Run

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
.figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}.fig{margin:0}.fig p{max-width:620px}
svg.plot{background:#fff;border:1px solid #ccc;display:block;max-width:100%;height:auto}
details{margin:.6em 0}summary{cursor:pointer;font-weight:bold}.verdict{border:2px solid #333;padding:.3em 1em;margin:.6em 0}
.answer{font-size:1.15em;font-weight:bold}small{color:#555}
nav a{margin-right:1em}.ref{background:#f6f6f6;font-size:.88em;text-align:left;white-space:nowrap}
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
