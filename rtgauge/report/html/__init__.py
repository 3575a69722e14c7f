"""A self-contained HTML report of one or more runs: one file, plots as inline SVG,
no scripts, no fonts, images or styles fetched from anywhere. Everything that comes
from the measured system (host names, command lines, error texts) is escaped.

Sections: summary (headline figures and rating per system), systems (facts and
doctor checks side by side, differences marked), latency (per-CPU histograms,
max per window, T = Ti + Ts + Tw), microbenchmarks (avg/max per system beside the
published figures; behaviour verdicts), tire (hard/soft real-time maps, real-fast
curves, cost terms) and method (how every figure was measured).

One module a section (summary, regressions, systems, latency, pwcet, micro, published, tire,
hil, method); page.py holds the style sheet and the pieces they share. The figures come
from rtgauge/analysis/; this package only lays them out."""

from __future__ import annotations

from datetime import datetime, timezone

from rtgauge.analysis import system_label
from rtgauge.analysis.records import Run, as_run
from rtgauge.analysis.headline import DEFAULT_BUDGET_US, headline
from rtgauge.report.html.hil import render_hil
from rtgauge.report.html.latency import render_latency
from rtgauge.report.html.method import render_method
from rtgauge.report.html.micro import render_micro
from rtgauge.report.html.page import CSS, e, section
from rtgauge.report.html.published import render_published
from rtgauge.report.html.pwcet import render_pwcet
from rtgauge.report.html.regressions import render_regressions
from rtgauge.report.html.summary import render_summary
from rtgauge.report.html.systems import render_systems
from rtgauge.report.html.tire import render_tire, render_tire_cost
from rtgauge.report.stalls import render_stalls_html
from rtgauge import safefile


def write_report(runs: list[Run | dict], path: str, **options) -> None:
    text = render(runs, **options)
    safefile.write_text(path, text)       # never through a planted link; whole or not at all


def render(runs: list[Run | dict], budget_us: float = DEFAULT_BUDGET_US, title: str | None = None,
           comparisons: list | None = None, tripped: list[str] | None = None) -> str:
    """comparisons: [(candidate run, [Change])] from rtgauge compare, shown as a
    regressions section after the summary."""
    runs = [as_run(r) for r in runs if r]
    heads = [headline(r, budget_us) for r in runs]
    title = title or ("rtgauge report: " + ", ".join(system_label(r) for r in runs[:4])
                      + (f" and {len(runs) - 4} more" if len(runs) > 4 else ""))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width,initial-scale=1'>",
             # no network and no scripts, enforced by the browser as well
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
             "img-src data:\">",
             f"<title>{e(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>Can this system carry a real-time job?</h1><p class='note'>rtgauge report of "
             f"{len(runs)} run{'s' if len(runs) != 1 else ''}, generated {now}. Worst case is the headline "
             f"for real time; every figure says how it was measured.</p>",
             "<nav><a href='#summary'>Summary</a><a href='#systems'>Systems</a><a href='#latency'>Latency</a>"
             "<a href='#pwcet'>Probable worst case</a>"
             "<a href='#micro'>Microbenchmarks</a><a href='#stalls'>Host stalls</a><a href='#published'>Published</a><a href='#tire'>Tire model</a>"
             "<a href='#tirecost'>Tire cost</a><a href='#hil'>HIL loop</a>"
             "<a href='#method'>Method</a></nav>",
             section("summary", "Summary: the rating per system", render_summary(runs, heads, budget_us)),
             (section("regressions", "Regressions against the baseline", render_regressions(runs, comparisons, tripped))
              if comparisons is not None else ""),
             section("systems", "Systems: facts and doctor checks", render_systems(runs)),
             section("latency", "Wake-up latency", render_latency(runs)),
             section("pwcet", "Probable worst case (extreme value theory)", render_pwcet(runs)),
             section("micro", "Microbenchmarks", render_micro(runs)),
             section("stalls", "Host stalls: averages with and without stall-touched samples",
                     render_stalls_html(runs)),
             section("published", "The published evaluations, redone", render_published(runs)),
             section("tire", "Tire model: real-time vs real-fast", render_tire(runs)),
             section("tirecost", "Tire model: the cost equation, predicted against measured",
                     render_tire_cost(runs)),
             section("hil", "Hardware-in-the-loop loop", render_hil(runs)),
             section("method", "How it was measured", render_method(runs)),
             "</body></html>"]
    return "".join(parts)
