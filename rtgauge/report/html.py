"""A self-contained HTML report: one file, plots as inline SVG, no scripts, no
network. Everything that comes from the measured system is escaped."""

from __future__ import annotations

import math
from html import escape

from rtgauge.analysis import cross_checks, latency_row, scalar

COLOURS = ("#1b5e20", "#0d47a1", "#b71c1c", "#e65100", "#4a148c", "#006064", "#3e2723", "#263238")
DASHES = ("", "6 3", "2 2", "8 3 2 3")  # survive greyscale printing

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:72em;color:#222}
h1{font-size:1.6em}h2{font-size:1.3em;border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.bad{color:#b71c1c}.warn{color:#e65100}.ok{color:#1b5e20}
.note{color:#555;font-size:.9em}svg{background:#fff;border:1px solid #ddd;margin:.5em 0}
"""


def _num(v, digits=1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def write_report(runs: list[dict], path: str) -> None:
    with open(path, "w") as f:
        f.write(render(runs))


def render(runs: list[dict]) -> str:
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<title>rtgauge report</title><style>", CSS, "</style></head><body>",
             "<h1>rtgauge report</h1>"]
    for run in runs:
        parts.append(render_run(run))
    parts.append("</body></html>")
    return "".join(parts)


def render_run(run: dict) -> str:
    s = run.get("system") or {}
    out = [f"<h2>Run {run['id']} — {escape(str(s.get('hostname', '?')))} — {escape(str(run.get('status')))}</h2>",
           "<table>"]
    facts = (("profile", run.get("profile")), ("started", run.get("started_at")),
             ("kernel", s.get("kernel_release")), ("version", s.get("kernel_version")),
             ("preemption", s.get("preempt_model")), ("CPU", s.get("cpu_model")),
             ("CPUs", s.get("cpus")), ("clocksource", (s.get("clocksource") or {}).get("current")
                                       if isinstance(s.get("clocksource"), dict) else s.get("clocksource")),
             ("cmdline", s.get("cmdline")))
    for k, v in facts:
        out.append(f"<tr><th class='l'>{k}</th><td class='l'>{escape(str(v))}</td></tr>")
    out.append("</table>")
    out.append(render_latency_table(run))
    for m in run.get("measurements", []):
        if latency_row(m):
            out.append(render_histogram(m))
            out.append(render_series(m))
    out.append(render_other(run))
    out.append(render_doctor(run))
    return "".join(out)


def render_latency_table(run: dict) -> str:
    rows = [latency_row(m) for m in run.get("measurements", [])]
    rows = [r for r in rows if r]
    if not rows:
        return ""
    out = ["<h3>Wake-up latency (µs)</h3><table><tr><th class='l'>job</th><th class='l'>tool</th>"
           "<th class='l'>condition</th><th>samples</th><th>min</th><th>avg</th><th>p99</th>"
           "<th>p99.99</th><th>max</th><th>misses</th></tr>"]
    for r in rows:
        flag = " <span class='bad'>(fallback: not real-time)</span>" if r["fallback"] else ""
        flag += " <span class='warn'>(interrupted)</span>" if r["interrupted"] else ""
        out.append(f"<tr><td class='l'>{escape(r['name'])}{flag}</td><td class='l'>{escape(r['tool'])}</td>"
                   f"<td class='l'>{escape(str(r['condition']))}</td><td>{r['samples']:,}</td>"
                   f"<td>{_num(r['min_us'])}</td><td>{_num(r['avg_us'])}</td><td>{_num(r['p99_us'])}</td>"
                   f"<td>{_num(r['p9999_us'])}</td><td><b>{_num(r['max_us'])}</b></td>"
                   f"<td>{'–' if r['misses'] is None else r['misses']}</td></tr>")
    out.append("</table>")
    for pair in cross_checks(run.get("measurements", [])):
        bits = []
        for k, label in (("avg_us", "avg"), ("p99_us", "p99"), ("max_us", "max")):
            a, b, ratio = pair[k]
            bits.append(f"{label} {_num(a)} vs {_num(b)} µs" + (f" (×{ratio:.2f})" if ratio else ""))
        out.append(f"<p class='note'>rtgauge vs cyclictest, {escape(pair['name'])}: {'; '.join(bits)}</p>")
    return "".join(out)


def _thread_dists(m: dict) -> list[tuple[str, dict]]:
    metrics = m.get("metrics", {})
    env_threads = {t.get("index"): t for t in (m.get("env") or {}).get("threads", []) or []}
    per = sorted((k for k in metrics if k.startswith("ti#")), key=lambda k: int(k[3:]))
    out = []
    for k in per:
        idx = int(k[3:])
        cpu = env_threads.get(idx, {}).get("cpu")
        out.append((f"CPU {cpu}" if cpu is not None else f"thread {idx}", metrics[k]))
    return out or [("all", metrics["ti"])]


PLOT_BUCKETS_PER_DECADE = 40


def rebin_log(bins: list, per_decade: int = PLOT_BUCKETS_PER_DECADE) -> dict[int, int]:
    """Counts per plot bucket of equal log width (bucket k covers 10^(k/per_decade) µs),
    so histograms with different native bins (the engine's log-linear ones,
    cyclictest's 1 µs ones) are drawn on one grid and can be compared by shape."""
    out: dict[int, int] = {}
    for lo, hi, c in bins:
        mid_us = max((lo + hi) / 2000, 1e-3)
        k = math.floor(math.log10(mid_us) * per_decade)
        out[k] = out.get(k, 0) + c
    return out


def render_histogram(m: dict, width=640, height=260) -> str:
    """Per-CPU latency histograms: x = latency (µs, log), y = count (log); max marked."""
    curves = [(label, rebin_log(d.get("histogram", {}).get("bins", []))) for label, d in _thread_dists(m)]
    keys = [k for _, c in curves for k in c]
    if not keys:
        return ""
    per = PLOT_BUCKETS_PER_DECADE
    lx0 = math.floor(min(keys) / per)
    lx1 = max(math.ceil((max(keys) + 1) / per), lx0 + 1)
    ymax = max(v for _, c in curves for v in c.values())
    ly1 = max(math.log10(ymax) * 1.05, 1)
    L, B, R, T = 60, 40, 110, 30
    def X(k): return L + (k / per - lx0) / (lx1 - lx0) * (width - L - R)
    def Y(c): return height - B - math.log10(c) / ly1 * (height - B - T) if c >= 1 else height - B
    svg = [f"<svg width='{width}' height='{height}' role='img' viewBox='0 0 {width} {height}'>",
           f"<text x='{(width - R + L) / 2}' y='18' text-anchor='middle' font-weight='bold'>{escape(m['name'])}: "
           f"wake-up latency ({escape(str(m.get('condition')))})</text>",
           f"<line x1='{L}' y1='{height-B}' x2='{width-R}' y2='{height-B}' stroke='#000'/>",
           f"<line x1='{L}' y1='{T}' x2='{L}' y2='{height-B}' stroke='#000'/>",
           f"<text x='{(width - R + L) / 2}' y='{height-6}' text-anchor='middle'>latency (µs, log scale)</text>",
           f"<text x='14' y='{height/2}' transform='rotate(-90 14 {height/2})' text-anchor='middle' "
           f"font-size='12'>wake-ups per bin (log)</text>"]
    for e in range(lx0, lx1 + 1):
        x = X(e * per)
        svg.append(f"<line x1='{x:.1f}' y1='{height-B}' x2='{x:.1f}' y2='{height-B+4}' stroke='#000'/>"
                   f"<text x='{x:.1f}' y='{height-B+16}' text-anchor='middle' font-size='11'>{10**e:g}</text>")
    for e in range(0, math.floor(ly1) + 1):
        y = Y(10 ** e)
        svg.append(f"<text x='{L-4}' y='{y+4:.1f}' text-anchor='end' font-size='11'>{10**e:g}</text>")
    for i, (label, counts) in enumerate(curves):
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        # a step line over every plot bin from the first to the last, empty bins at 0
        pts = []
        for k in range(min(counts), max(counts) + 1):
            y = Y(counts.get(k, 0))
            pts.append(f"{X(k):.1f},{y:.1f} {X(k + 1):.1f},{y:.1f}")
        svg.append(f"<polyline fill='none' stroke='{colour}' stroke-dasharray='{dash}' points='{' '.join(pts)}'/>")
        svg.append(f"<line x1='{width-R+8}' y1='{T+10+16*i}' x2='{width-R+28}' y2='{T+10+16*i}' stroke='{colour}' "
                   f"stroke-dasharray='{dash}'/><text x='{width-R+32}' y='{T+14+16*i}' fill='{colour}' "
                   f"font-size='12'>{escape(label)}</text>")
    mx = m["metrics"]["ti"].get("max")
    if mx:
        x = min(X(math.log10(max(mx / 1000, 1e-3)) * per), width - R)
        svg.append(f"<line x1='{x:.1f}' y1='{T}' x2='{x:.1f}' y2='{height-B}' stroke='#b71c1c' stroke-dasharray='3 3'/>"
                   f"<text x='{width-R+8}' y='{height-B-4}' fill='#b71c1c' font-size='11'>max {mx/1000:,.1f} µs</text>")
    svg.append("</svg>")
    env = m.get("env") or {}
    params = m.get("params") or {}
    how = (f"{m['metrics']['ti'].get('count', 0):,} wake-ups, interval {params.get('interval_us', '?')} µs, "
           f"policy {env.get('policy', '?')} priority {env.get('priority', '?')}, condition {m.get('condition')}, "
           f"tool {m.get('tool')}; {PLOT_BUCKETS_PER_DECADE} bins per decade")
    return "".join(svg) + f"<p class='note'>{escape(how)}</p>"


def render_series(m: dict, width=640, height=160) -> str:
    series = m.get("metrics", {}).get("ti_window_max")
    if not series or not series.get("max"):
        return ""
    vals = series["max"]
    present = [v for v in vals if v is not None]
    if not present:
        return ""
    top = max(present) / 1000 * 1.1 or 1
    L, B, R, T = 60, 30, 20, 25
    n = len(vals)
    def X(i): return L + i / max(n - 1, 1) * (width - L - R)
    def Y(v): return height - B - (v / 1000) / top * (height - B - T)
    pts = " ".join(f"{X(i):.1f},{Y(v):.1f}" for i, v in enumerate(vals) if v is not None)
    win = series.get("window_ns", 1e9) / 1e9
    return (f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"
            f"<text x='{width/2}' y='16' text-anchor='middle' font-weight='bold'>max latency per {win:g} s window</text>"
            f"<line x1='{L}' y1='{height-B}' x2='{width-R}' y2='{height-B}' stroke='#000'/>"
            f"<line x1='{L}' y1='{T}' x2='{L}' y2='{height-B}' stroke='#000'/>"
            f"<text x='{L-4}' y='{T+4}' text-anchor='end' font-size='11'>{top:,.0f} µs</text>"
            f"<text x='{L-4}' y='{height-B}' text-anchor='end' font-size='11'>0</text>"
            f"<text x='{width/2}' y='{height-6}' text-anchor='middle'>time since start ({n} windows)</text>"
            f"<polyline fill='none' stroke='#0d47a1' points='{pts}'/></svg>")


def render_other(run: dict) -> str:
    out = []
    for m in run.get("measurements", []):
        if latency_row(m):
            continue
        if not m.get("ok"):
            out.append(f"<p class='bad'>{escape(m['name'])}: failed: {escape(str(m.get('error')))}</p>")
            continue
        mono, tsc = scalar(m, "timestamp_monotonic"), scalar(m, "timestamp_tsc")
        if mono is not None:
            out.append(f"<p>Timestamp cost: CLOCK_MONOTONIC {_num(mono)} ns, TSC "
                       f"{_num(tsc) + ' ns' if tsc is not None else 'unavailable'} (published bound: &lt; 100 ns).</p>")
    return "".join(out)


def render_doctor(run: dict) -> str:
    checks = run.get("doctor") or []
    if not checks:
        return ""
    out = ["<h3>Doctor: what on this system stands between it and real-time</h3><table>"
           "<tr><th class='l'>check</th><th class='l'>verdict</th><th class='l'>value</th><th class='l'>advice</th></tr>"]
    for c in checks:
        st = str(c.get("status"))
        out.append(f"<tr><td class='l'>{escape(str(c.get('name')))}</td><td class='l {escape(st)}'>{escape(st)}</td>"
                   f"<td class='l'>{escape(str(c.get('value')))}</td><td class='l'>{escape(str(c.get('advice') or ''))}</td></tr>")
    out.append("</table>")
    return "".join(out)
