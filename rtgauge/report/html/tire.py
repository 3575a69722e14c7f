"""The tire model sections: hard and soft real-time maps, real-fast curves, the cost
equation fit, and the cost equation predicted against measured."""

from __future__ import annotations

from rtgauge.analysis import system_label
from rtgauge.analysis.tire import (
    cost_fits,
    map_cells,
    map_keys,
    period_text,
    published_cost_term,
    published_hard_limits,
    realfast_curves,
    same_period,
    steps_label,
    thread_label,
    tire_points,
)
from rtgauge.analysis.tirecost import run_cost_model
from rtgauge.report.html.page import e, figure, flag, us
from rtgauge.report.svg import Axis, Plot, Series, heatmap


def render_tire(runs: list[dict]) -> str:
    out = []
    for run in runs:
        points = tire_points(run)
        fits = cost_fits(run)
        if not points and not fits:
            continue
        facts = run.system
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
            out.append(f"<h4>Cost equation fit ({e(m.name)})</h4><p class='note'>Ts = Nswitch·Tswitch + "
                       "4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass, e = n / threads nodes per thread.</p>"
                       "<table><tr><th class='l'>term</th><th>value</th><th class='l'>unit</th><th class='l'>published</th></tr>")
            for name, metric in fit["terms"].items():
                ref = published_cost_term(name)
                out.append(f"<tr><td class='l'>{e(name)}</td><td>{e(fmt_value(metric.value))}</td>"
                           f"<td class='l'>{e(metric.unit)}</td><td class='l'>"
                           f"{e(f'{ref.text} {ref.unit} ({ref.platform})') if ref else '–'}</td></tr>")
            out.append("</table>")
    if out:
        refs = published_hard_limits()
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
        model = run_cost_model(run.to_dict())
        for policy, m in (model or {}).items():
            c = m["constants"]
            tsw, micro = m["tswitch_ns"], m["tswitch_micro_ns"]
            spread = "; ".join(f"{k} {v['median']:.2f} ns ({v['min']:.2f}–{v['max']:.2f} over {v['runs']} runs)"
                               for k, v in c.items())
            out.append(f"<h4>Run {e(run.id)}, {e(system_label(run))} · {e(policy)}</h4><p class='note'>Ts = r·(ops·Tipc + "
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
