"""The trend section: per system and condition, max, p99 and the credible worst case
of each run against its start time, significant changes marked (analysis/compare/trend.py)."""

from __future__ import annotations

from rtgauge.analysis.compare.trend import started, trend
from rtgauge.report.html.page import e, figure, num
from rtgauge.report.svg import Axis, Plot, Series
from rtgauge.records import Run


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit of a time axis chosen by its span, so its ticks read as whole numbers of
    seconds, minutes, hours or days (not "days, 0–0.01")."""
    for unit, per, up_to in (("seconds", 1, 120), ("minutes", 60, 120 * 60), ("hours", 3600, 72 * 3600)):
        if span_s <= up_to:
            return unit, per
    return "days", 86400


def render_trend(runs: list[Run]) -> str:
    groups = trend(runs)
    if not groups:
        return ""
    by_id = {r.id: r for r in runs}
    out = []
    for g in groups:
        pts = g["points"]
        t0 = started(by_id[pts[0]["run"]])
        times = [started(by_id[p["run"]]) for p in pts]
        dated = bool(t0) and all(times)
        unit, per = time_unit(max((t - t0).total_seconds() for t in times) if dated else 0)

        def x(p):
            t = started(by_id[p["run"]])
            return (t - t0).total_seconds() / per if dated else float(pts.index(p))
        series = []
        for key, label in (("max_us", "max"), ("p99_us", "p99"), ("pwcet_us", "credible worst case")):
            line = [(x(p), p[key]) for p in pts if p[key]]
            if line:
                series.append(Series(label, line, markers=True))
        plot = Plot(f"{g['system']}, {g['condition']}: wake-up latency over time",
                    Axis(f"{unit} since the first run" if dated else "run, in order", integer=not dated),
                    Axis("latency (µs, log)", log=True), series, height=240)
        out.append(f"<h3>{e(g['system'])}, condition {e(g['condition'])}</h3><div class='figs'>")
        out.append(figure(plot.render(), e(f"{len(pts)} runs; each point one run's engine jobs of this condition; "
                                           "the credible worst case only where its checks pass.")))
        out.append("</div><div class='wide'><table><tr><th class='l'>run</th><th class='l'>started</th>"
                   "<th>max µs</th><th>p99 µs</th><th>credible worst case µs</th>"
                   "<th class='l'>significant change from the run before</th></tr>")
        for p in pts:
            marks = "; ".join(f"{c['figure']} {c['call']} ({num((c['base'] or 0) / 1000)} → "
                              f"{num((c['value'] or 0) / 1000)} µs)" for c in p["changes"])
            cls = " class='diff'" if p["changes"] else ""
            out.append(f"<tr{cls}><td class='l'>{e(p['run'])}</td><td class='l'>{e(p['started_at'])}</td>"
                       f"<td>{num(p['max_us'])}</td><td>{num(p['p99_us'])}</td>"
                       f"<td>{num(p['pwcet_us']) if p['pwcet_us'] else '–'}</td>"
                       f"<td class='l'>{e(marks) if marks else 'none'}</td></tr>")
        out.append("</table></div>")
    out.append("<p class='note'>A change is marked when `rtgauge compare` of the run with the one before calls "
               "it significantly worse or better (Benjamini–Hochberg over the figures compared, docs/compare.md).</p>")
    return "".join(out)
