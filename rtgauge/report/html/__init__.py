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

import re
from datetime import datetime, timezone

from rtgauge.analysis.run.rows import system_label
from rtgauge.records import Run
from rtgauge.analysis.run.headline import DEFAULT_BUDGET_US, headline
from rtgauge.report.html.hil import render_hil
from rtgauge.report.html.latency import render_latency
from rtgauge.report.html.method import render_method
from rtgauge.report.html.micro import render_micro
from rtgauge.report.html.page import CSS, e, responsive_tables, section
from rtgauge.report.html.published import render_published
from rtgauge.report.html.pwcet import render_pwcet
from rtgauge.report.html.regressions import render_regressions
from rtgauge.report.html.summary import render_summary
from rtgauge.report.html.systems import render_systems
from rtgauge.report.html.tire import render_tire, render_tire_cost
from rtgauge.report.html.trend import render_trend
from rtgauge.report.spikes import render_spikes_html
from rtgauge.report.stalls import render_stalls_html
from rtgauge import safefile
from rtgauge.analysis.run.verdict import judge


def write_report(runs: list[Run], path: str, **options) -> None:
    text = render(runs, **options)
    safefile.write_text(path, text)       # never through a planted link; whole or not at all


# The order of the question: can it carry the job (verdict and rating), what the latency
# looks like, then the rest; facts and how it was measured last.
NAV = (("summary", "Verdict"), ("latency", "Latency"), ("spikes", "Why it spiked"), ("pwcet", "Probable worst case"),
       ("regressions", "Regressions"), ("micro", "Microbenchmarks"), ("stalls", "Host stalls"),
       ("published", "Published"), ("tire", "Tire model"), ("tirecost", "Tire cost"), ("hil", "HIL loop"),
       ("trend", "Trend"), ("systems", "Systems"), ("method", "Method"))
EMPTY = re.compile(r"^\s*(<p>No [^<]*</p>)?\s*$")


def is_empty(body: str) -> bool:
    """A section body that says only that nothing was measured (or nothing at all):
    such a section is left out of the page and of its navigation."""
    return bool(EMPTY.match(body or ""))


def render(runs: list[Run], budget_us: float = DEFAULT_BUDGET_US, title: str | None = None,
           comparisons: list | None = None, tripped: list[str] | None = None, budget=None,
           trend: bool = False) -> str:
    """comparisons: [(candidate run, [Change])] from rtgauge compare, shown as a
    regressions section after the latency; budget: the job (analysis/run/verdict.py
    Budget), whose verdict opens the page; trend: add the trend section (runs over time)."""
    runs = [r for r in runs if r]
    if budget is not None:
        budget_us = budget.latency_us
    heads = [headline(r, budget_us) for r in runs]
    verdicts = None
    if budget is not None:
        verdicts = [judge(r, budget) for r in runs]
    title = title or ("rtgauge report: " + ", ".join(system_label(r) for r in runs[:4])
                      + (f" and {len(runs) - 4} more" if len(runs) > 4 else ""))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    shown_budget = budget_us if budget is not None or budget_us != DEFAULT_BUDGET_US else None
    bodies = {
        "summary": ("Can it carry the job? Verdict and rating", render_summary(runs, heads, budget_us, verdicts)),
        "latency": ("Wake-up latency", render_latency(runs, shown_budget)),
        "spikes": ("Why it spiked: what delayed the late wake-ups", render_spikes_html(runs)),
        "pwcet": ("Probable worst case (extreme value theory)", render_pwcet(runs)),
        "regressions": ("Regressions against the baseline", render_regressions(runs, comparisons, tripped)
                        if comparisons is not None else ""),
        "micro": ("Microbenchmarks", render_micro(runs)),
        "stalls": ("Host stalls: averages with and without stall-touched samples", render_stalls_html(runs)),
        "published": ("The published evaluations, redone", render_published(runs)),
        "tire": ("Tire model: real-time vs real-fast", render_tire(runs)),
        "tirecost": ("Tire model: the cost equation, predicted against measured", render_tire_cost(runs)),
        "hil": ("Hardware-in-the-loop loop", render_hil(runs)),
        "trend": ("Trend: each system over time", render_trend(runs) if trend else ""),
        "systems": ("Systems: facts and doctor checks", render_systems(runs)),
        "method": ("How it was measured", render_method(runs)),
    }
    shown = [(ident, label) for ident, label in NAV if not is_empty(bodies[ident][1])]
    main, table_css = responsive_tables("".join(section(ident, bodies[ident][0], bodies[ident][1])
                                                for ident, _ in shown))
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width,initial-scale=1'>",
             # no network and no scripts, enforced by the browser as well
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
             "img-src data:\">",
             f"<title>{e(title)}</title><style>{CSS}{table_css}</style></head><body>",
             f"<header><h1>Can this system carry a real-time job?</h1><p class='note'>rtgauge report of "
             f"{len(runs)} run{'s' if len(runs) != 1 else ''}, generated {now}. Worst case is the headline "
             f"for real time; every figure says how it was measured.</p>",
             "<nav aria-label='sections'>" + "".join(f"<a href='#{i}'>{e(label)}</a>" for i, label in shown)
             + "</nav></header><main>"]
    parts += [main, "</main></body></html>"]
    return "".join(parts)
