"""A self-contained HTML report of one or more runs: one file, plots as inline SVG,
no scripts, no fonts, images or styles fetched from anywhere. Everything that comes
from the measured system (host names, command lines, error texts) is escaped.

Sections: summary (headline verdict and rating per system), systems (facts and
doctor verdicts side by side, differences marked), latency (per-CPU histograms,
max per window, T = Ti + Ts + Tw), microbenchmarks (avg/max per system beside the
published figures; behaviour verdicts), tire (hard/soft real-time maps, real-fast
curves, cost terms) and method (how every figure was measured)."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape

from rtgauge.analysis import cross_checks, latency_measurements, latency_row, scalar, system_label
from rtgauge.analysis.histograms import (
    PLOT_BUCKETS_PER_DECADE,
    rebin_log,
    step_points,
    thread_distributions,
    window_series,
)
from rtgauge.analysis.micro import micro_rows, micro_scalars, rhealstone, verdict_rows
from rtgauge.analysis.published import overlay_curves, published_verdicts, studies, systems_of
from rtgauge.analysis.systems import doctor_rows, fact_rows
from rtgauge.analysis.tire import (
    cost_fits,
    held_text,
    map_cells,
    map_keys,
    period_text,
    realfast_curves,
    same_period,
    steps_label,
    thread_label,
    tire_points,
)
from rtgauge.analysis.verdict import DEFAULT_BUDGET_US, SOFT_MISS_RATIO, SOFT_WORST_US, headline
from rtgauge.catalogue import LOOP, catalogue
from rtgauge.analysis.tirecost import run_cost_model
from rtgauge.reference import tire_published
from rtgauge.report.numbers import avg_sigma, fmt_group, latency_figures, us_group
from rtgauge.report.stalls import render_stalls_html
from rtgauge.report.svg import Axis, Plot, Series, budget_bar, heatmap, overlaid_histograms

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em 2em;color:#222;max-width:90em}
h1{font-size:1.7em;margin-bottom:.2em}h2{font-size:1.35em;border-bottom:2px solid #333;margin-top:2.2em}
h3{font-size:1.1em;margin-top:1.6em}h4{font-size:1em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#eee}td.l,th.l{text-align:left}.wide{overflow-x:auto;max-width:100%}
.bad{color:#b71c1c;font-weight:bold}.warn{color:#e65100}.ok{color:#1b5e20}.info{color:#555}
tr.diff td,tr.diff th{background:#fff3cd}tr.diff th::after{content:' ≠';color:#b71c1c}
.note{color:#555;font-size:.9em;margin:.2em 0 1em}.flag{background:#b71c1c;color:#fff;padding:0 .4em;border-radius:3px;font-size:.85em}
.stars{font-size:1.3em;letter-spacing:.05em;white-space:nowrap}.cmd{font-family:monospace;font-size:.85em;word-break:break-all}
.figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}.fig{margin:0}.fig p{max-width:620px}
svg.plot{background:#fff;border:1px solid #ccc;display:block}small{color:#555}
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
    return "–" if ns is None else f"{ns / 1000:,.{digits}f}"


def write_report(runs: list[dict], path: str, **options) -> None:
    text = render(runs, **options)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def render(runs: list[dict], budget_us: float = DEFAULT_BUDGET_US, title: str | None = None,
           comparisons: list | None = None, tripped: list[str] | None = None) -> str:
    """comparisons: [(candidate run, [Change])] from rtgauge compare, shown as a
    regressions section after the summary."""
    runs = [r for r in runs if r]
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
             section("summary", "Summary: the verdict per system", render_summary(runs, heads, budget_us)),
             (section("regressions", "Regressions against the baseline", render_regressions(runs, comparisons, tripped))
              if comparisons is not None else ""),
             section("systems", "Systems: facts and doctor verdicts", render_systems(runs)),
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


def section(ident: str, heading: str, body: str) -> str:
    return f"<section id='{ident}' class='section'><h2>{e(heading)}</h2>{body}</section>"


def flag(text: str) -> str:
    return f" <span class='flag'>{e(text)}</span>"


# ---- summary ---------------------------------------------------------------

def render_summary(runs: list[dict], heads: list[dict], budget_us: float) -> str:
    if not runs:
        return "<p>No runs.</p>"
    out = ["<div class='wide'><table><tr><th class='l'>system</th><th class='l'>rating</th>"
           "<th>worst wake-up latency idle (µs)</th><th>worst loaded (µs)</th><th>missed deadlines</th>"
           "<th class='l'>tire: largest n with zero misses, at its period</th><th class='l'>flags</th></tr>"]
    for run, h in zip(runs, heads):
        r = h["rating"]
        flags = []
        if h["fallback"]:
            flags.append(flag("not real-time: fallback in " + ", ".join(h["fallback"])))
        if run.get("status") != "complete":
            flags.append(flag(f"run {run.get('status')}"))
        if any(not m.get("ok") for m in run.get("measurements", [])):
            flags.append(flag(f"{sum(not m.get('ok') for m in run['measurements'])} job(s) failed"))
        tire = "<br>".join(
            f"{e(period_text(t['period_ms']))}, {e(t['policy'])}, {e(t['threads_label'])} thread(s), {e(t['solver'])}: "
            f"<b>{num(t['max_masses'], 0) if t['max_masses'] else 'none'}</b>"
            + (f" <small>({e(held_text(t))})</small>" if held_text(t) else "")
            for t in h["tire"]) or "<small>not measured</small>"
        loaded = num(h["worst_loaded_us"]) + (f" <small>({e(h['loaded_condition'])})</small>" if h["loaded_condition"] else "")
        out.append(f"<tr><td class='l'>{e(system_label(run))}</td><td class='l'><span class='stars' "
                   f"title='{e(r.klass)}'>{e(r.glyphs)}</span><br>{e(r.klass)}"
                   + "".join(f"<br><small>{e(x)}</small>" for x in r.reasons)
                   + f"</td><td><b>{num(h['worst_idle_us'])}</b></td><td><b>{loaded}</b></td>"
                   f"<td>{'–' if h['misses'] is None else h['misses']}</td><td class='l'>{tire}</td>"
                   f"<td class='l'>{''.join(flags) or 'none'}</td></tr>")
    out.append("</table></div>")
    out.append(f"<p class='note'>Rating, in the spirit of the published five-star scale (docs/report.md): "
               f"★★★★★ hard real-time out of the box — zero missed deadlines and worst-case wake-up latency ≤ "
               f"{budget_us:,.0f} µs in every latency job, idle and loaded, on a system without real-time tuning; "
               f"★★★★ the same after tuning (isolated CPUs, nohz_full, tuned profile, …); ★★★ soft real-time out of "
               f"the box — missed deadlines ≤ {SOFT_MISS_RATIO:.1%} of cycles and worst case ≤ {SOFT_WORST_US / 1000:g} ms "
               f"(one 100 Hz period); ★★ soft after tuning; ★ real-time scheduling works but not even soft real time; "
               f"no star: measured without real-time scheduling. Worst cases are our engine's (cyclictest is the "
               f"cross-check); the tire column is the published headline: the largest model (masses) whose every "
               f"step met its deadline, at the period named (the study's is 10 ms, 100 Hz).</p>")
    return "".join(out)


# ---- regressions -----------------------------------------------------------

def render_regressions(runs: list[dict], comparisons: list, tripped: list[str] | None) -> str:
    out = [f"<p class='note'>Baseline: {e(system_label(runs[0]))}. Worse or better means a significant "
           "difference: over the rounds of each job (or, with one round, the uncertainty inside each run), after "
           "the Benjamini-Hochberg adjustment over all figures of the comparison; the interval is the 95 % "
           "interval of the difference (docs/compare.md).</p>"]
    if tripped:
        out.append("<p class='bad'>--fail-on tripped:</p><ul>" + "".join(f"<li>{e(t)}</li>" for t in tripped) + "</ul>")
    for cand, changes in comparisons:
        shown = [c for c in changes if c.verdict in ("worse", "better")]
        out.append(f"<h3>{e(system_label(cand))}: {sum(c.verdict == 'worse' for c in changes)} worse, "
                   f"{sum(c.verdict == 'better' for c in changes)} better of {len(changes)} figures</h3>")
        if not shown:
            out.append("<p>No significant difference.</p>")
            continue
        out.append("<table><tr><th class='l'>figure</th><th>baseline</th><th>candidate</th><th>change</th>"
                   "<th>95 % interval</th><th class='l'>verdict</th><th class='l'>why</th></tr>")
        for c in sorted(shown, key=lambda c: c.verdict != "worse"):
            rel = c.relative
            unit = c.figure.unit
            def fv(v):
                if v is None:
                    return "–"
                if unit == "ns":
                    return f"{v / 1000:,.2f} µs"
                return f"{v:,.0f} {unit}" if float(v).is_integer() else f"{v:,.4g} {unit}"
            iv = c.result.interval if c.result is not None else None
            iv_text = "–" if iv is None else f"{fv(iv[0])} … {fv(iv[1])}"
            out.append(f"<tr><td class='l'>{e(c.figure.label)}</td><td>{e(fv(c.base))}</td><td>{e(fv(c.value))}</td>"
                       f"<td>{'–' if rel is None else f'{rel:+.1%}'}</td><td>{e(iv_text)}</td><td class='l "
                       f"{'bad' if c.verdict == 'worse' else 'ok'}'>{e(c.verdict)}</td><td class='l'>{e(c.why)}</td></tr>")
        out.append("</table>")
    return "".join(out)


# ---- systems ---------------------------------------------------------------

def run_headers(runs: list[dict], first: str) -> str:
    return f"<tr><th class='l'>{e(first)}</th>" + "".join(f"<th class='l'>{e(system_label(r))}</th>" for r in runs) + "</tr>"


def render_systems(runs: list[dict]) -> str:
    if not runs:
        return "<p>No runs.</p>"
    out = ["<div class='wide'><table>", run_headers(runs, "fact")]
    for row in fact_rows(runs):
        cls = " class='diff'" if row["differs"] else ""
        cells = "".join(f"<td class='l{' cmd' if row['fact'] == 'kernel command line' else ''}'>{e(v)}</td>"
                        for v in row["values"])
        out.append(f"<tr{cls}><th class='l'>{e(row['fact'])}</th>{cells}</tr>")
    out.append("</table></div>")
    if len(runs) > 1:
        out.append("<p class='note'>Rows marked ≠ (highlighted) differ between the systems.</p>")
    drows = doctor_rows(runs)
    if drows:
        out.append("<h3>Doctor: what stands between each system and real time</h3><div class='wide'><table>")
        out.append(run_headers(runs, "check"))
        for row in drows:
            cls = " class='diff'" if row["differs"] else ""
            cells = []
            for c in row["cells"]:
                if c is None:
                    cells.append("<td class='l'>–</td>")
                    continue
                st = str(c.get("status"))
                cells.append(f"<td class='l'><span class='{e(st)}'>{e(st)}</span>: {e(c.get('value'))}"
                             + (f"<br><small>{e(c.get('advice'))}</small>" if c.get("advice") and st != "ok" else "")
                             + "</td>")
            out.append(f"<tr{cls}><th class='l'>{e(row['check'])}</th>{''.join(cells)}</tr>")
        out.append("</table></div>")
    return "".join(out)


# ---- latency ---------------------------------------------------------------

def render_latency(runs: list[dict]) -> str:
    out = []
    for run in runs:
        ms = latency_measurements(run)
        if not ms:
            continue
        out.append(f"<h3>{e(system_label(run))}</h3>")
        out.append(latency_table(run, ms))
        conditions = []
        for m in ms:
            if m.get("condition") not in conditions:
                conditions.append(m.get("condition"))
        for cond in conditions:
            group = [m for m in ms if m.get("condition") == cond]
            out.append(f"<h4>Condition: {e(cond)}{load_text(group[0])}</h4><div class='figs'>")
            for m in group:
                out.append(figure(histogram_plot(m), how_measured(m)))
            for m in group:
                plot = window_plot(m)
                if plot:
                    out.append(figure(plot, f"Largest wake-up latency in each window of the run ({e(m['name'])}); "
                                            "a spike that recurs is periodic interference, a single one a rare event."))
            for m in group:
                bar = equation_bar(m)
                if bar:
                    out.append(figure(bar, equation_text(m)))
            out.append("</div>")
    return "".join(out) or "<p>No wake-up latency measurements in these runs.</p>"


def load_text(m: dict) -> str:
    load = m.get("load") or {}
    if not load.get("tool"):
        return ""
    bits = [f"{load.get('tool')}"]
    if load.get("workers"):
        bits.append(f"{load['workers']} workers")
    if load.get("cpu_s") is not None:
        bits.append(f"{load['cpu_s']:.1f} s CPU delivered")
    return f" <small>(load: {e(', '.join(bits))})</small>"


def figure(svg: str, caption: str) -> str:
    return f"<figure class='fig'>{svg}<p class='note'>{caption}</p></figure>"


def latency_table(run: dict, ms: list[dict]) -> str:
    out = ["<div class='wide'><table><tr><th class='l'>job</th><th class='l'>tool</th><th class='l'>condition</th>"
           "<th>samples</th><th>min µs</th><th>avg ± σ µs</th><th>p99 µs</th><th>p99.99 µs</th><th>max µs</th>"
           "<th>misses</th></tr>"]
    for m in ms:
        r = latency_row(m)
        flags = (flag("fallback: not real-time") if r["fallback"] else "") + (flag("interrupted") if r["interrupted"] else "")
        out.append(f"<tr><td class='l'>{e(r['name'])}{flags}</td><td class='l'>{e(r['tool'])}</td>"
                   f"<td class='l'>{e(r['condition'])}</td><td>{r['samples']:,}</td>"
                   + "".join(f"<td>{avg_sigma(r) if i == 1 else v}</td>" for i, v in enumerate(latency_figures(r)[:4]))
                   + f"<td><b>{latency_figures(r)[4]}</b></td>"
                   f"<td>{'–' if r['misses'] is None else r['misses']}</td></tr>")
    out.append("</table></div>")
    for pair in cross_checks(run.get("measurements", [])):
        bits = []
        for k, label in (("avg_us", "avg"), ("p99_us", "p99"), ("max_us", "max")):
            a, b, ratio = pair[k]
            bits.append(f"{label} {num(a)} vs {num(b)} µs" + (f" (×{ratio:.2f})" if ratio else ""))
        out.append(f"<p class='note'>rtgauge vs cyclictest, {e(pair['name'])}: {e('; '.join(bits))}</p>")
    return "".join(out)


def histogram_plot(m: dict) -> str:
    series = []
    for label, dist in thread_distributions(m):
        pts = step_points(rebin_log((dist.get("histogram") or {}).get("bins") or []))
        if pts:
            series.append(Series(label, pts, steps=True, width=10 ** (1 / PLOT_BUCKETS_PER_DECADE)))
    plot = Plot(f"{m['name']}: wake-up latency per CPU", Axis("latency Ti (µs, log scale)", log=True),
                Axis("wake-ups per bucket (log)", log=True, lo=1), series)
    if not series:
        plot.title += " (no histogram stored)"
    mx = ((m.get("metrics") or {}).get("ti") or {}).get("max")
    if mx:
        plot.vlines.append((mx / 1000, f"max {mx / 1000:,.1f} µs", "#b71c1c"))
    return plot.render()


def how_measured(m: dict) -> str:
    env, params = m.get("env") or {}, m.get("params") or {}
    ti = (m.get("metrics") or {}).get("ti") or {}
    bits = [f"{ti.get('count', 0):,} wake-ups", f"every {params.get('interval_us', '?')} µs",
            f"{params.get('duration_s') or m.get('duration_s') or '?'} s",
            f"policy {env.get('policy', params.get('policy', '?'))} priority {env.get('priority', params.get('priority', '?'))}",
            f"condition {m.get('condition')}", f"tool {m.get('tool')}"]
    if m.get("tool") == "cyclictest":
        bits.append("1 µs resolution")
    text = e(", ".join(bits)) + f"; counts spread onto {PLOT_BUCKETS_PER_DECADE} buckets per decade so tools compare."
    if latency_row(m)["fallback"]:
        text += flag("fallback: ran without real-time scheduling")
    return text


def window_plot(m: dict) -> str:
    curves = window_series(m)
    if not curves or max(len(p) for _, p, _ in curves) < 2:
        return ""
    win = curves[0][2]
    series = [Series(label, pts, markers=len(pts) <= 60) for label, pts, _ in curves]
    return Plot(f"{m['name']}: max latency per {win:g} s window", Axis("time since start (s)"),
                Axis("max Ti in window (µs, log)", log=True), series, height=230).render()


def equation_parts(m: dict) -> tuple[float, list] | None:
    metrics = m.get("metrics") or {}
    ti, ts, tw = metrics.get("ti"), metrics.get("ts"), metrics.get("tw")
    params = m.get("params") or {}
    period_us = (params.get("interval_us") or params.get("period_us")
                 or (params.get("period_ms") or 0) * 1000)
    if not (ti and ts and tw and period_us) or ti.get("avg") is None or ts.get("avg") is None:
        return None
    avg = [("Ti", ti["avg"] / 1000), ("Ts", ts["avg"] / 1000), ("Tw", (tw.get("avg") or 0) / 1000)]
    worst = [("Ti", (ti.get("max") or 0) / 1000), ("Ts", (ts.get("max") or 0) / 1000),
             ("Tw", max((tw.get("min") or 0) / 1000, 0))]
    return float(period_us), [("average", avg), ("worst Ti, Ts", worst)]


def equation_bar(m: dict) -> str:
    parts = equation_parts(m)
    if not parts:
        return ""
    period, cases = parts
    return budget_bar(f"{m['name']}: T = Ti + Ts + Tw", period, cases)


def equation_text(m: dict) -> str:
    period, cases = equation_parts(m)
    (_, avg), (_, worst) = cases
    tw_min = ((m.get("metrics") or {}).get("tw") or {}).get("min")
    return e(f"Average cycle: {period:,.0f} µs = {avg[0][1]:,.1f} (Ti) + {avg[1][1]:,.1f} (Ts) + {avg[2][1]:,.1f} (Tw). "
             f"Worst: Ti {worst[0][1]:,.1f} µs, Ts {worst[1][1]:,.1f} µs, smallest slack Tw "
             f"{(tw_min or 0) / 1000:,.1f} µs (negative: a missed deadline).")


# ---- microbenchmarks -------------------------------------------------------

def render_micro(runs: list[dict]) -> str:
    rows = micro_rows(runs)
    out = []
    if rows:
        ids = [r.get("id") for r in runs if any(r.get("id") in row.cells for row in rows)]
        shown = [r for r in runs if r.get("id") in ids]
        out.append("<div class='wide'><table><tr><th class='l' rowspan='2'>test</th><th class='l' rowspan='2'>condition</th>"
                   + "".join(f"<th colspan='2'>{e(system_label(r))}</th>" for r in shown)
                   + "<th class='ref' rowspan='2'>published beside it<br>(same method)</th>"
                   + "</tr><tr>" + "<th>avg µs</th><th>max µs</th>" * len(shown) + "</tr>")
        for row in rows:
            cells = []
            for r in shown:
                c = row.cells.get(r.get("id"))
                if not c:
                    cells.append("<td>–</td><td>–</td>")
                    continue
                avg, mx = us_group([c["avg"], c["max"]])
                cells.append(f"<td>{avg}</td><td><b>{mx}</b></td>")
            out.append(f"<tr><td class='l'>{e(row.label)}</td><td class='l'>{e(row.condition)}</td>"
                       f"{''.join(cells)}<td class='ref'>{published_pointer(row.published)}</td></tr>")
        out.append("</table></div><p class='note'>Each figure is the engine's distribution of every sample "
                   "(avg and worst case, µs; avg and max of a cell share their decimals). The published figures "
                   "of the same method are in the section <a href='#published'>The published evaluations</a>, "
                   "one column per published system; docs/report.md lists how published tests map to "
                   "rtgauge's tests.</p>")
    for run in runs:
        lines = rhealstone(run)
        if lines:
            out.append(f"<p><b>Rhealstone</b> ({e(system_label(run))}; 1 / mean of the component times, "
                       "rtgauge/analysis/rhealstone.py):<br>" + "<br>".join(e(x) for x in lines) + "</p>")
    vrows = verdict_rows(runs)
    if vrows:
        shown = [r for r in runs if any(r.get("id") in v["cells"] for v in vrows)]
        out.append("<h3>Behaviour verdicts</h3><div class='wide'><table><tr><th class='l'>test</th>"
                   "<th class='l'>verdict</th><th class='l'>condition</th>"
                   + "".join(f"<th class='l'>{e(system_label(r))}</th>" for r in shown) + "</tr>")
        for v in vrows:
            cells = []
            for r in shown:
                c = v["cells"].get(r.get("id"))
                cells.append("<td class='l'>–</td>" if c is None else
                             f"<td class='l'><span class='{'ok' if c['pass'] else 'bad'}'>"
                             f"{'pass' if c['pass'] else 'FAIL'}</span> <small>{e(c['detail'])}</small></td>")
            label = v["test"] + (f" [{v['variant']}]" if v["variant"] else "")
            out.append(f"<tr><td class='l'>{e(label)}</td><td class='l'>{e(v['verdict'])}</td>"
                       f"<td class='l'>{e(v['condition'])}</td>{''.join(cells)}</tr>")
        out.append("</table></div>")
    scal = [(r, s) for r in runs for s in micro_scalars(r)]
    if scal:
        out.append("<h3>Other figures</h3><table><tr><th class='l'>system</th><th class='l'>job</th>"
                   "<th class='l'>figure</th><th>value</th><th class='l'>unit</th></tr>")
        for r, (name, metric, value, unit) in scal:
            out.append(f"<tr><td class='l'>{e(system_label(r))}</td><td class='l'>{e(name)}</td>"
                       f"<td class='l'>{e(metric)}</td><td>{e(value)}</td><td class='l'>{e(unit)}</td></tr>")
        out.append("</table>")
    for run in runs:
        for m in run.get("measurements", []):
            mono, tsc = scalar(m, "timestamp_monotonic"), scalar(m, "timestamp_tsc")
            if mono is not None:
                out.append(f"<p class='note'>Timestamp cost on {e(system_label(run))}: CLOCK_MONOTONIC {num(mono)} ns, "
                           f"TSC {num(tsc) + ' ns' if tsc is not None else 'unavailable'} (published bound: &lt; 100 ns); "
                           "sub-microsecond figures above include about one timestamp.</p>")
    return "".join(out) or "<p>No microbenchmarks in these runs.</p>"


def published_pointer(rows) -> str:
    """The studies whose figures of the same method sit beside this row, as links."""
    from rtgauge.analysis.published import STUDIES
    titles = {st.source: st for st in STUDIES}
    seen = []
    for p in rows:
        if p.source not in seen:
            seen.append(p.source)
    return "<br>".join(f"<a href='#pub-{e(src)}'>{e(titles[src].title.split(' (')[0] if src in titles else src)}</a>"
                       for src in seen) or "–"


# ---- the published evaluations ------------------------------------------------

def published_cell(study, stats: dict) -> str:
    """A published system's figures in the study's own layout (µs)."""
    def pv(stat):
        p = stats.get(stat)
        if p is None:
            return None, ""
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(p.unit)
        return (None if p.value is None or scale is None else p.value * scale), p.bound
    text = {}
    for stat in study.stats:
        v, bound = pv(stat)
        text[stat] = "–" if v is None else f"{bound}{v:,g}"   # as published: its own digits
    if "value" in stats and not any(s in stats for s in study.stats):   # a single figure (IRQ-S-SUS)
        v, bound = pv("value")
        return e(f"{bound}{v:,g}" if v is not None else stats["value"].text) + (
            f" <small>({e(stats['value'].note)})</small>" if stats["value"].note else "")
    return layout_text(study, text)


def layout_cell(study, values: list, bounds: list | None = None) -> str:
    """values in the order of study.stats, laid out as the study prints them; one
    number of decimals for the cell (so a max never reads below its average)."""
    return layout_text(study, dict(zip(study.stats, fmt_group(values, prefixes=bounds))))


def layout_text(study, text: dict) -> str:
    if study.layout == "max (avg ± σ)":
        return f"<b>{text['max']}</b> ({text['avg']} ± {text['stddev']})"
    return " / ".join(f"<b>{text[s]}</b>" if s == "max" else text[s] for s in study.stats)


def measured_cell(study, placed: dict) -> str:
    status = placed.get("status")
    if status == "compared":
        st = placed["stats"]
        return (f"<td>{layout_cell(study, [st.get(k) for k in study.stats])}<br><small>{e(placed['measurement'])} "
                f"{e(placed['metric'])}, {st.get('count') or 0:,} samples</small></td>")
    if status == "different method":
        name = f"{e(placed['measurement'])}: " if placed.get("measurement") else ""
        return f"<td class='l info'><small>{name}{e(placed.get('note'))}; not compared</small></td>"
    return f"<td class='l info'><small>not measured{e(' (' + placed['condition'] + ')') if placed.get('condition') else ''}</small></td>"


def render_published(runs: list[dict]) -> str:
    out = ["<p class='note'>Each published row sits beside the measurement whose method matches (docs/method.md); "
           "where only a measurement of a different method exists it is named and not compared. Published figures "
           "come from other hardware and years: compare orders of magnitude and ratios between systems, not single "
           "values. µs throughout.</p>"]
    found = studies(runs)
    for study, rows in found:
        systems = systems_of(rows)
        shown = [r for r in runs if any(row.placed.get(r.get("id"), {}).get("status") != "not measured"
                                        for row in rows)]
        platform = next((p.platform for row in rows for st in row.published.values() for p in st.values()), "")
        out.append(f"<h3 id='pub-{e(study.source)}'>{e(study.title)}</h3><p class='note'>Published on "
                   f"{e(platform)}; every cell reads {e(study.layout)} µs.</p>")
        out.append("<div class='wide'><table><tr><th class='l'>test</th><th class='l'>condition</th>"
                   + "".join(f"<th class='ref'>{e(s)}</th>" for s in systems)
                   + "".join(f"<th>{e(system_label(r))}</th>" for r in shown) + "</tr>")
        group = None
        for row in rows:
            if row.method.group != group:
                group = row.method.group
                out.append(f"<tr><th class='l' colspan='{2 + len(systems) + len(shown)}'>{e(group)}: "
                           f"<small>published: {e(row.method.what)}; rtgauge: {e(row.method.ours or 'no counterpart')}"
                           f"</small></th></tr>")
            cond = row.condition + (f" → {row.our_condition}" if row.our_condition not in (None, row.condition) else "")
            cells = "".join(f"<td class='ref'>{published_cell(study, row.published[s])}</td>" if s in row.published
                            else "<td class='ref'>–</td>" for s in systems)
            mine = "".join(measured_cell(study, row.placed.get(r.get("id"), {})) for r in shown)
            out.append(f"<tr><td class='l'>{e(row.test)}</td><td class='l'>{e(cond)}</td>{cells}{mine}</tr>")
        out.append("</table></div>")
    if not found:
        out.append("<p>No measurement in these runs reproduces a published one.</p>")
    vrows = published_verdicts(runs)
    if vrows:
        out.append("<h3>Behaviour verdicts beside the published ones</h3><div class='wide'><table><tr>"
                   "<th class='l'>test</th><th class='l'>verdict</th><th class='l'>published</th>"
                   + "".join(f"<th class='l'>{e(system_label(r))}</th>" for r in runs) + "</tr>")
        for v in vrows:
            cells = []
            for r in runs:
                c = v["cells"].get(r.get("id"))
                if c is None:
                    cells.append("<td class='l'>–</td>")
                    continue
                finding = "" if c["agrees"] else flag("disagrees with the published verdict")
                cells.append(f"<td class='l'><span class='{'ok' if c['pass'] else 'bad'}'>"
                             f"{'pass' if c['pass'] else 'FAIL'}</span>{finding} <small>{e(c['detail'])}</small></td>")
            out.append(f"<tr><td class='l'>{e(v['test'])}</td><td class='l'>{e(v['verdict'])}</td>"
                       f"<td class='l'>{'pass' if v['published_pass'] else 'FAIL'}: {e(v['published'])}</td>"
                       f"{''.join(cells)}</tr>")
        out.append("</table></div><p class='note'>A disagreement is a finding about the system measured here "
                   "(or about the published test's primitive), not an error of the report.</p>")
    overlays = overlay_curves(runs)
    if overlays:
        out.append("<h3>Wake-up latency of the systems in one figure</h3><div class='figs'>")
        for cond, curves in overlays.items():
            svg = overlaid_histograms(f"Wake-up latency, {cond}: every system",
                                      [(f"run {r.get('id')}: {(r.get('system') or {}).get('hostname') or r.get('hostname') or '?'}",
                                        (ti.get("histogram") or {}).get("bins") or [], ti.get("max"))
                                       for r, ti in curves])
            out.append(figure(svg, e(f"Histogram of every wake-up (Ti) of each run's first latency job under "
                                     f"condition {cond}, one curve per system (run id and host: "
                                     "the systems table names each), as the cyclictest study draws its systems; the "
                                     "dashed lines are each curve's maximum.")))
        out.append("</div>")
    return "".join(out)


# ---- tire ------------------------------------------------------------------

def render_tire(runs: list[dict]) -> str:
    out = []
    for run in runs:
        points = tire_points(run)
        fits = cost_fits(run)
        if not points and not fits:
            continue
        facts = run.get("system") or {}
        out.append(f"<h3>{e(system_label(run))}</h3>")
        for mode, period in map_keys(points):
            out += tire_maps(points, mode, period, facts)
        for (solver, policy), curves in sorted(realfast_curves(points).items()):
            series = [Series(f"{thread_label(t, facts)} thr", pts, markers=True) for t, pts in sorted(curves.items())]
            steps = {p.steps for p in points if p.mode == "realfast" and p.solver == solver and p.policy == policy}
            plot = Plot(f"Real-fast: wall time ({solver}, {policy})", Axis("masses n (log)", log=True),
                        Axis("wall time (s, log)", log=True), series)
            out.append(figure(plot.render(), e(f"Wall time of {steps_label(steps)} (10 ms of simulated time "
                                               f"each) as fast as possible, one curve per thread count; policy "
                                               f"{policy}, solver {solver}; lower is faster.")))
        for fit in fits:
            m = fit["measurement"]
            out.append(f"<h4>Cost equation fit ({e(m['name'])})</h4><p class='note'>Ts = Nswitch·Tswitch + "
                       "4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass, e = n / threads nodes per thread.</p>"
                       "<table><tr><th class='l'>term</th><th>value</th><th class='l'>unit</th><th class='l'>published</th></tr>")
            pub = {p.test.replace("tire_cost_", "").lower(): p for p in tire_published() if p.test.startswith("tire_cost_")}
            for name, metric in fit["terms"].items():
                ref = next((p for k, p in pub.items() if name.lower().replace("_", "").endswith(k)), None)
                out.append(f"<tr><td class='l'>{e(name)}</td><td>{e(fmt_value(metric.get('value')))}</td>"
                           f"<td class='l'>{e(metric.get('unit'))}</td><td class='l'>"
                           f"{e(f'{ref.text} {ref.unit} ({ref.platform})') if ref else '–'}</td></tr>")
            out.append("</table>")
    if out:
        refs = [p for p in tire_published() if p.test.startswith("tire_hard_rt")]
        out.append("<p class='note'>Published (i7-3930K, 6 cores/12 threads, 100 Hz): "
                   + e("; ".join(f"{p.system}, {p.test.split('threads=')[-1]}: {float(p.value):,.0f} masses"
                                 for p in refs)) + ".</p>")
    return "".join(out) or "<p>No tire model runs in these runs.</p>"


def tire_maps(points, mode: str, period: float, facts: dict) -> list[str]:
    """The hard and the soft real-time map of one mode and period, per solver and policy."""
    out = []
    hard, soft = map_cells(points, period, mode), map_cells(points, period, mode, soft=True)
    name = "Pretest" if mode == "pretest" else "Real time"
    at = period_text(period)
    for (solver, policy), cells in sorted(hard.items()):
        threads = sorted({t for t, _ in cells})
        masses = sorted({n for _, n in cells})
        rows = [thread_label(t, facts) for t in threads]
        cols = [f"{n:,}" for n in masses]
        grid = {(i, j): cells.get((t, n)) for i, t in enumerate(threads) for j, n in enumerate(masses)}
        soft_cells = soft.get((solver, policy), {})
        soft_masses = sorted({n for _, n in soft_cells}) or masses      # the sizes run to the end
        soft_grid = {(i, j): soft_cells.get((t, n)) for i, t in enumerate(threads) for j, n in enumerate(soft_masses)}
        mine = [p for p in points if p.mode == mode and same_period(p.period_ms, period)
                and p.solver == solver and p.policy == policy]
        fb = any(p.fallback for p in mine)
        how = (f"{name.lower()} mode, period {at}, solver {solver}, policy {policy}, "
               f"{steps_label({p.steps_asked or p.steps for p in mine})} per point")
        out.append("<div class='figs'>")
        out.append(figure(heatmap(f"{name}, hard, at {at}: {solver}, {policy}", rows, cols, grid,
                                  "threads", "masses n", binary=True),
                          e(f"Green 0: every step met its deadline; dark hatched 'miss': at least one missed. "
                            f"A point run more than once shows its best run (the sweep repeats a late probe). "
                            f"{how}.") + (flag("fallback: not real-time") if fb else "")))
        out.append(figure(heatmap(f"{name}, soft, at {at}: missed steps ({solver}, {policy})", rows,
                                  [f"{n:,}" for n in soft_masses], soft_grid, "threads", "masses n"),
                          e(f"Missed deadlines per point (darker = more), from the runs that ran every step; "
                            f"'·': no such run at that point (one cut by its time limit, or none made). "
                            f"The bisection's probes, which stop at the first miss, are in the hard map only. "
                            f"{how}.")))
        out.append("</div>")
    return out


def render_tire_cost(runs: list[dict]) -> str:
    """Per run and policy: the cost-equation constants the locked solver measured
    and each configuration's step time predicted from the other configurations'
    constants, beside the measured one (docs/tire.md "Cost equation")."""
    out = []
    for run in runs:
        model = run_cost_model(run)
        for policy, m in (model or {}).items():
            c = m["constants"]
            tsw, micro = m["tswitch_ns"], m["tswitch_micro_ns"]
            spread = "; ".join(f"{k} {v['median']:.2f} ns ({v['min']:.2f}–{v['max']:.2f} over {v['runs']} runs)"
                               for k, v in c.items())
            out.append(f"<h4>Run {e(run.get('id'))}, {e(system_label(run))} · {e(policy)}</h4><p class='note'>Ts = r·(ops·Tipc + "
                       "(2e+1)·Tspring + e·Tmass) + Nswitch·Tswitch, r = threads per CPU, ops = 6e + 4 lock "
                       f"operations per share. Measured by the solver: {e(spread)}. Tswitch (step time outside "
                       f"the timed phases per switch): {e('–' if tsw is None else us(tsw) + ' µs')}"
                       + (e(f"; the switch microbenchmark gives {us(micro, 2)} µs") if micro is not None else "")
                       + f". Median prediction error (each configuration from the others): "
                       f"<b>{m['median_error']:.0%}</b>.</p>")
            out.append("<table><tr><th>masses</th><th>threads</th><th>Nswitch</th><th>measured Ts (median, µs)"
                       "</th><th>predicted Ts (µs)</th><th>error</th></tr>")
            for r in m["predictions"]:
                out.append(f"<tr><td>{r['masses']:,}</td><td>{r['threads']}</td><td>{r['nswitch']:.2f}</td>"
                           f"<td>{us(r['measured_ns'])}</td><td>{us(r['predicted_ns'])}</td>"
                           f"<td>{r['error']:.0%}</td></tr>")
            out.append("</table>")
    return "".join(out) or ("<p>No tire runs of the locked solver with timed phases (at least two "
                            "configurations per policy) in these runs.</p>")


def fmt_value(v) -> str:
    return f"{v:,.4g}" if isinstance(v, float) else str(v)


# ---- method ----------------------------------------------------------------

# ---- hardware-in-the-loop ---------------------------------------------------

def hil_payload(params: dict) -> str:
    payload = params.get("payload") or "none"
    if payload == "work":
        return f"work {params.get('work_us')} µs"
    if payload == "tire":
        return f"tire {params.get('masses'):,} masses, {params.get('threads')} threads"
    return "none"


def scalar_value(m: dict, name: str):
    return ((m.get("metrics") or {}).get(name) or {}).get("value")


def render_hil(runs: list[dict]) -> str:
    """Per run: every hil job (round trip at the device, Ti/Ts/Tw at the simulation,
    frames lost and deadlines missed) and the sustained-rate sweep."""
    out = []
    for run in runs:
        loops = [m for m in run.get("measurements", [])
                 if catalogue().kind_of(m.get("test") or "") == LOOP and m.get("ok")]
        rates = [m for m in run.get("measurements", []) if m.get("test") == "hil-sustained" and m.get("ok")]
        if not loops and not rates:
            continue
        out.append(f"<h3>{e(system_label(run))}</h3>")
        if loops:
            out.append("<div class='wide'><table><tr><th class='l'>job</th><th class='l'>condition</th>"
                       "<th class='l'>step</th><th>period µs</th><th>frames</th><th>lost</th><th>misses</th>"
                       "<th>round trip p50 / p99 / max µs</th><th>Ti p99 / max µs</th><th>Ts avg / max µs</th>"
                       "<th>Tw min µs</th></tr>")
            for m in loops:
                params, metrics = m.get("params") or {}, m.get("metrics") or {}
                rt, ti, ts, tw = (metrics.get(k) or {} for k in ("round_trip", "ti", "ts", "tw"))
                out.append(f"<tr><td class='l'>{e(m['name'])}</td><td class='l'>{e(m.get('condition'))}</td>"
                           f"<td class='l'>{e(hil_payload(params))}</td><td>{num(params.get('period_us'), 0)}</td>"
                           f"<td>{num(scalar_value(m, 'sent'), 0)}</td><td>{num(scalar_value(m, 'lost_frames'), 0)}</td>"
                           f"<td><b>{num(scalar_value(m, 'misses'), 0)}</b></td>"
                           f"<td>{us(rt.get('p50'))} / {us(rt.get('p99'))} / <b>{us(rt.get('max'))}</b></td>"
                           f"<td>{us(ti.get('p99'))} / <b>{us(ti.get('max'))}</b></td>"
                           f"<td>{us(ts.get('avg'))} / {us(ts.get('max'))}</td><td>{us(tw.get('min'))}</td></tr>")
            out.append("</table></div><p class='note'>The device sends a frame every period and expects the "
                       "reply before its next send (else a miss); the simulation wakes on the frame (Ti, from "
                       "the kernel's receive timestamp), runs one step (Ts) and replies; Tw is the slack left "
                       "before the next frame. Lost frames are sequence numbers that never came back.</p>")
            bars = [figure(equation_bar(m), equation_text(m)) for m in loops if equation_parts(m)]
            if bars:
                out.append("<div class='figs'>" + "".join(bars) + "</div>")
        for m in rates:
            metrics = m.get("metrics") or {}
            out.append("<table><tr><th class='l'>sustained rate: step</th><th>shortest period µs</th>"
                       "<th>rate Hz</th><th class='l'>verdict</th></tr>")
            for name, v in sorted((m.get("verdicts") or {}).items()):
                tag = name.split("#", 1)[-1]
                period = (metrics.get(f"shortest_period#{tag}") or {}).get("value")
                rate = (metrics.get(f"sustained_rate#{tag}") or {}).get("value")
                out.append(f"<tr><td class='l'>{e(tag)}</td><td>{num(period, 0)}</td><td>{num(rate, 0)}</td>"
                           f"<td class='l'>{e(v.get('detail'))}</td></tr>")
            params = m.get("params") or {}
            out.append(f"</table><p class='note'>The shortest period at which a run of {num(params.get('frames'), 0)} "
                       f"frames lost no frame and missed no deadline, per step size: "
                       "the counterpart of the published maximum sustained interrupt rate.</p>")
    return "".join(out) or "<p>No hardware-in-the-loop measurements in these runs.</p>"


def render_method(runs: list[dict]) -> str:
    out = []
    for run in runs:
        out.append(f"<h3>{e(system_label(run))}</h3><p class='note'>Profile {e(run.get('profile'))}, "
                   f"started {e(run.get('started_at'))}, status {e(run.get('status'))}"
                   + (f" — {e(run.get('note'))}" if run.get("note") else "") + "; command: "
                   f"<span class='cmd'>{e(' '.join(str(a) for a in run.get('argv') or []))}</span></p>")
        out.append("<div class='wide'><table><tr><th class='l'>job</th><th class='l'>tool</th><th class='l'>test</th>"
                   "<th class='l'>condition</th><th>duration s</th><th class='l'>policy / priority</th>"
                   "<th class='l'>CPUs</th><th class='l'>result</th><th class='l'>options</th></tr>")
        for m in run.get("measurements", []):
            env, params = m.get("env") or {}, m.get("params") or {}
            result = "ok" if m.get("ok") else f"failed: {m.get('error')}"
            flags = ""
            if latency_row(m) and latency_row(m)["fallback"]:
                flags += flag("fallback: not real-time")
            if m.get("interrupted"):
                flags += flag("interrupted")
            opts = ", ".join(f"{k}={v}" for k, v in params.items() if v not in (None, False) and k != "out")
            out.append(f"<tr><td class='l'>{e(m.get('name'))}</td><td class='l'>{e(m.get('tool'))}</td>"
                       f"<td class='l'>{e(m.get('test'))}</td><td class='l'>{e(m.get('condition'))}</td>"
                       f"<td>{num(m.get('duration_s'))}</td><td class='l'>{e(env.get('policy'))} / "
                       f"{e(env.get('priority'))}</td><td class='l'>{e(env.get('cpus'))}</td>"
                       f"<td class='l {'ok' if m.get('ok') else 'bad'}'>{e(result)}{flags}</td>"
                       f"<td class='l cmd'>{e(opts)}</td></tr>")
        out.append("</table></div>")
    return "".join(out) or "<p>No runs.</p>"


# ---- probable worst case (pWCET) -----------------------------------------------

def render_pwcet(runs: list[dict]) -> str:
    """Per latency measurement of each run: the probable worst case from extreme value
    theory (or why it is not applicable), the checks, and a return-level plot."""
    from rtgauge.analysis import is_latency_measurement
    from rtgauge.analysis.pwcet import measurement_pwcet, plot_data
    from rtgauge.report.svg import return_level_plot

    out = []
    for run in runs:
        rows, figs = [], []
        for m in run.get("measurements", []):
            if not is_latency_measurement(m) or not m.get("ok", True):
                continue
            for r in measurement_pwcet(m):
                checks = "; ".join(f"{c.name}: {'ok' if c.passed else ('not tested' if c.passed is None else 'FAIL')}"
                                   + (f" (p={c.p_value:.2g})" if c.p_value is not None else "") for c in r.checks)
                if r.applicable:
                    high = "unbounded" if r.ci_high_ns is None else num(r.ci_high_ns / 1000)
                    cells = (f"<td><b>{num(r.level_ns / 1000)}</b></td><td>{num(r.ci_low_ns / 1000)}–{high}</td>"
                             f"<td class='l'>{e(r.rate_text())}</td>")
                else:
                    cells = f"<td colspan='3' class='l warn'>not applicable because {e(r.reason)}</td>"
                rows.append(f"<tr><td class='l'>{e(m.get('name'))}</td><td class='l'>{e(m.get('condition'))}</td>"
                            f"<td>{r.blocks} × {r.block_cycles:,}</td><td>{num((r.observed_max_ns or 0) / 1000)}</td>"
                            f"{cells}<td class='l'><small>{e(checks)}</small></td></tr>")
                d = plot_data(r)
                svg = return_level_plot(f"{m.get('name')}: return levels", d["observed"], d["curve"], d["band"],
                                        d["mark"])
                cap = (f"Block maxima of {r.block_cycles:,} cycles against their return period; " +
                       (f"the fitted GEV (ξ={r.fit.shape:+.2f}) with its 95% profile-likelihood band, and the "
                        f"level at p marked with its interval: {e(r.summary())}."
                        if r.applicable else f"no fit shown: not applicable because {e(r.reason)}."))
                figs.append(figure(svg, cap))
        if rows:
            out.append(f"<h3>{e(system_label(run))}</h3><div class='wide'><table><tr><th class='l'>job</th>"
                       "<th class='l'>condition</th><th>blocks × cycles</th><th>observed max µs</th>"
                       "<th>pWCET µs</th><th>95% CI µs</th><th class='l'>at this rate</th><th class='l'>checks</th></tr>"
                       + "".join(rows) + "</table></div><div class='figs'>" + "".join(figs) + "</div>")
    if not out:
        return "<p>No latency measurement with per-window maxima in these runs.</p>"
    return ("<p class='note'>The latency exceeded with a small probability per cycle, estimated by fitting a "
            "generalised extreme value distribution to the per-window maxima, only where the maxima are "
            "independent, identically distributed and fitted well (docs/pwcet.md). The interval is where the "
            "true level lies with 95% confidence if those conditions hold.</p>" + "".join(out))
