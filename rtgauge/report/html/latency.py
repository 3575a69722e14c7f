"""The wake-up latency section: per-job table, per-CPU histograms, the maximum per
window, and the cycle equation T = Ti + Ts + Tw as a budget bar."""

from __future__ import annotations

from rtgauge.analysis.run.rows import ROW_METRIC_TEXT, cross_check_text, cross_checks, latency_measurements, latency_row, row_metric, system_label
from rtgauge.analysis.run.cycle import equation_parts
from rtgauge.records import Measurement, Run
from rtgauge.analysis.run.histograms import PLOT_BUCKETS_PER_DECADE, rebin_log, step_points, thread_distributions, window_series
from rtgauge.analysis.run.marks import marks, not_idle_text
from rtgauge.report.html.page import e, figure, flag
from rtgauge.report.numbers import avg_sigma, latency_figures, misses_text
from rtgauge.report.svg import Axis, Plot, Series, budget_bar


def shared_x_range(runs: list[Run], budget_us: float | None = None) -> tuple[float, float] | None:
    """One latency range (µs) for every histogram of the report, so panels that are
    compared (engine and cyclictest, idle and loaded, system and system) line up."""
    lows, highs = [], []
    for run in runs:
        for m in latency_measurements(run):
            for _, dist in thread_distributions(m):
                pts = step_points(rebin_log(dist.bins))
                if pts:
                    lows.append(pts[0][0])
                    highs.append(pts[-1][0] * 10 ** (1 / PLOT_BUCKETS_PER_DECADE))
            if m.metric(row_metric(m)).max:
                highs.append(m.metric(row_metric(m)).max / 1000)
    if not lows:
        return None
    if budget_us:
        highs.append(budget_us)
    return min(lows), max(highs)


def render_latency(runs: list[Run], budget_us: float | None = None) -> str:
    out = []
    xr = shared_x_range(runs, budget_us)
    for run in runs:
        ms = latency_measurements(run)
        if not ms:
            continue
        out.append(f"<h3>{e(system_label(run))}</h3>")
        out.append(latency_table(run, ms))
        conditions = []
        for m in ms:
            if m.condition not in conditions:
                conditions.append(m.condition)
        for cond in conditions:
            group = [m for m in ms if m.condition == cond]
            out.append(f"<h4>Condition: {e(cond)}{load_text(group[0])}</h4><div class='figs'>")
            for m in group:
                out.append(figure(histogram_plot(m, xr, budget_us), how_measured(m)))
            for m in group:
                plot = window_plot(m)
                if plot:
                    out.append(figure(plot, f"Largest wake-up latency in each window of the run ({e(m.label)}); "
                                            "a spike that recurs is periodic interference, a single one a rare event."))
            for m in group:
                bar = equation_bar(m)
                if bar:
                    out.append(figure(bar, equation_text(m)))
            out.append("</div>")
    return "".join(out)


def load_text(m: Measurement) -> str:
    load = m.load
    if not load.get("tool"):
        return ""
    bits = [f"{load.get('tool')}"]
    if load.get("workers"):
        bits.append(f"{load['workers']} workers")
    if load.get("cpu_s") is not None:
        bits.append(f"{load['cpu_s']:.1f} s CPU delivered")
    return f" <small>(load: {e(', '.join(bits))})</small>"


def latency_table(run: Run, ms: list[Measurement]) -> str:
    out = ["<div class='wide'><table><tr><th class='l'>job</th><th class='l'>tool</th><th class='l'>condition</th>"
           "<th>samples</th><th>min µs</th><th>avg ± σ µs</th><th>p99 µs</th><th>p99.99 µs</th><th>max µs</th>"
           "<th>misses</th></tr>"]
    for m in ms:
        r = latency_row(m)
        flags = "".join(flag(text) for text in marks(m)) + (flag(m.stopped_early) if m.stopped_early else "")
        out.append(f"<tr><td class='l'>{e(r['name'])}{flags}</td><td class='l'>{e(r['tool'])}</td>"
                   f"<td class='l'>{e(r['condition'])}</td><td>{r['samples']:,}</td>"
                   + "".join(f"<td>{avg_sigma(r) if i == 1 else v}</td>" for i, v in enumerate(latency_figures(r)[:4]))
                   + f"<td><b>{latency_figures(r)[4]}</b></td>"
                   f"<td>{e(misses_text(r['misses'], r['skipped']))}</td></tr>")
    out.append("</table></div>")
    for pair in cross_checks(run.measurements):
        figures, what = cross_check_text(pair, "–", " µs")
        out.append(f"<p class='note'>rtgauge vs {e(pair['reference'])}{e(what)}, {e(pair['name'])}: "
                   f"{e(figures)}</p>")
    return "".join(out)


def histogram_plot(m: Measurement, x_range: tuple[float, float] | None = None,
                   budget_us: float | None = None) -> str:
    """Every non-empty bucket is drawn: the count axis starts a decade below one wake-up,
    so a lone wake-up, or its larger share where the rebinning spread it over two or
    three buckets (at least a third), rises above the floor instead of lying on it.
    Counts are whole wake-ups: the axis is labelled at 1, 10, 100, … only."""
    series = []
    for label, dist in thread_distributions(m):
        pts = step_points(rebin_log(dist.bins))
        if pts:
            series.append(Series(label, pts, steps=True, width=10 ** (1 / PLOT_BUCKETS_PER_DECADE)))
    lo, hi = x_range if x_range else (None, None)
    plot = Plot(f"{m.label}: wake-up latency per CPU", Axis("latency Ti (µs, log scale)", log=True, lo=lo, hi=hi),
                Axis("wake-ups per bucket (log)", log=True, lo=0.1, integer=True), series)
    if budget_us:
        plot.vlines.append((budget_us, f"budget {budget_us:,.6g} µs", "#0d47a1"))
    if not series:
        plot.title += " (no histogram stored)"
    mx = m.metric(row_metric(m)).max
    if mx:
        plot.vlines.append((mx / 1000, f"max {mx / 1000:,.1f} µs", "#b71c1c"))
    return plot.render()


def how_measured(m: Measurement) -> str:
    env, params = m.env, m.params
    bits = [f"{m.metric(row_metric(m)).count or 0:,} wake-ups", f"every {m.period_us if m.period_us is not None else '?'} µs",
            f"{m.param('duration_s') or m.duration_s or '?'} s",
            f"policy {env.get('policy', params.get('policy', '?'))} priority {env.get('priority', params.get('priority', '?'))}",
            f"condition {m.condition}", f"tool {m.tool}"]
    if m.tool == "cyclictest":
        bits.append("1 µs resolution")
    if m.tool == "rtla":
        bits.append(f"rtla timerlat, the kernel's own timer: shown, {ROW_METRIC_TEXT[row_metric(m)]} "
                    f"({row_metric(m)}); its IRQ's latency is timerlat_irq (neither is a user-space wake-up, "
                    "ti), 1 µs buckets")
    text = e(", ".join(bits)) + f"; counts spread onto {PLOT_BUCKETS_PER_DECADE} buckets per decade so tools compare."
    if m.fallback:
        text += flag("fallback: ran without real-time scheduling")
    if not_idle_text(m):
        text += flag(not_idle_text(m))
    return text


def window_plot(m: Measurement) -> str:
    curves = window_series(m)
    if not curves or max(len(p) for _, p, _ in curves) < 2:
        return ""
    win = curves[0][2]
    # a window without a value (nothing stored for it) breaks the line
    series = [Series(label, pts, markers=len(pts) <= 60, gap=1.5 * w) for label, pts, w in curves]
    return Plot(f"{m.label}: max latency per {win:g} s window", Axis("time since start (s)"),
                Axis("max Ti in window (µs, log)", log=True), series, height=230).render()


def equation_bar(m: Measurement) -> str:
    parts = equation_parts(m)
    if not parts:
        return ""
    period, cases = parts
    return budget_bar(f"{m.label}: T = Ti + Ts + Tw", period, cases)


def equation_text(m: Measurement) -> str:
    period, cases = equation_parts(m)
    (_, avg), (_, worst) = cases
    tw_min = m.metric("tw").min
    return e(f"Average cycle: {period:,.0f} µs = {avg[0][1]:,.1f} (Ti) + {avg[1][1]:,.1f} (Ts) + {avg[2][1]:,.1f} (Tw). "
             f"Worst: Ti {worst[0][1]:,.1f} µs, Ts {worst[1][1]:,.1f} µs, smallest slack Tw "
             f"{(tw_min or 0) / 1000:,.1f} µs (negative: a missed deadline).")
