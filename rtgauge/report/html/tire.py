"""The tire model sections: hard and soft real-time maps, real-fast curves, the cost
equation fit, and the cost equation predicted against measured."""

from __future__ import annotations

from rtgauge.analysis.run.rows import system_label
from rtgauge.analysis.run.tire import (
    cost_fits,
    map_cells,
    map_keys,
    period_text,
    headline_limits,
    pretest_threads,
    map_attempts,
    published_cost_term,
    published_hard_limits,
    published_limit_kind,
    published_limit_threads,
    realfast_curves,
    same_period,
    steps_label,
    thread_label,
    tire_points,
)
from rtgauge.analysis.studies.tirecost import run_cost_model
from rtgauge.report.html.page import e, figure, flag, us
from rtgauge.report.svg import Axis, Plot, Series, heatmap
from rtgauge.records import Run


def render_tire(runs: list[Run]) -> str:
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
            out.append(f"<h4>Cost equation fit ({e(m.label)})</h4><p class='note'>Ts = Nswitch·Tswitch + "
                       "4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass, e = n / threads nodes per thread.</p>"
                       "<table><tr><th class='l'>term</th><th>value</th><th class='l'>unit</th><th class='l'>published</th></tr>")
            for name, metric in fit["terms"].items():
                ref = published_cost_term(name)
                out.append(f"<tr><td class='l'>{e(name)}</td><td>{e(fmt_value(metric.value))}</td>"
                           f"<td class='l'>{e(metric.unit)}</td><td class='l'>"
                           f"{e(f'{ref.text} {ref.unit} ({ref.platform})') if ref else '–'}</td></tr>")
            out.append("</table>")
    if out:
        out.append(limits_beside_published(runs))
        out.append(pretest_beside_published(runs))
    return "".join(out) or "<p>No tire model runs in these runs.</p>"


def limits_beside_published(runs) -> str:
    """The measured hard limits at 100 Hz (held up to / lost at, apart) with the
    published limits beside them, each under its own label."""
    rows = []
    for run in runs:
        for lim in headline_limits(run):
            if not same_period(lim["period_ms"], 10.0):
                continue
            again = ", ".join(f"{n:,}" for n in lim.get("held_above_lost") or [])
            held = f"{lim['max_masses']:,}" if lim["max_masses"] else "none"
            lost = f"{lim['lost_at']:,}" if lim.get("lost_at") else "not lost"
            rows.append(f"<tr><td class='l'>{e(system_label(run))}</td><td class='l'>{e(lim['policy'])}, "
                        f"{e(lim['solver'])}</td><td class='l'>{e(thread_label(lim['threads'], run.system))}</td>"
                        f"<td>{held}</td><td>{lost}</td><td>{e(again) or '–'}</td></tr>")
    refs = published_hard_limits()
    pub = "".join(f"<tr><td class='l'>{e(p.system)} <small>(published, {e(p.platform)})</small></td>"
                  f"<td class='l'>–</td><td class='l'>{e(published_limit_threads(p))}</td>"
                  + (f"<td>{float(p.value):,.0f}</td><td>–</td>" if published_limit_kind(p) == "held up to"
                     else f"<td>–</td><td>{float(p.value):,.0f}</td>") + "<td>–</td></tr>" for p in refs)
    if not rows:
        return ""
    return ("<h4>Hard real-time limits at 10 ms (100 Hz), beside the published ones</h4><div class='wide'><table>"
            "<tr><th class='l'>system</th><th class='l'>policy, solver</th><th class='l'>threads</th>"
            "<th>held up to (masses)</th><th>lost at (masses)</th><th>held again above the loss</th></tr>"
            + "".join(rows) + pub + "</table></div><p class='note'>“Held up to”: the largest size with no missed "
            "step below the first size that missed; “lost at”: that first size. The study gives Xenomai's limits "
            "as sizes held and Linux's as sizes where hard real time was lost (docs/tire.md); each sits in its "
            "own column.</p>")


def pretest_beside_published(runs) -> str:
    """The pretest's thread findings per run (first miss at the smallest model, the
    thread ceiling), the study's figures beside them under their own label."""
    rows, pub = [], {}
    for run in runs:
        cpus = run.system.get("cpus") if isinstance(run.system.get("cpus"), int) else None
        for c in pretest_threads(run):
            pub = pub or c["published"]
            first, ceiling = c["first_miss_threads"], c["ceiling_threads"]
            n = c["smallest_models"].get(str(first)) if first else None
            per = (lambda t: f" ({t / cpus:.3g} per logical CPU)" if cpus else "")
            rows.append(f"<tr><td class='l'>{e(system_label(run))}</td><td class='l'>{e(c['policy'])}, "
                        f"{e(c['solver'])}</td><td class='l'>{e(', '.join(map(str, c['threads_tried'])))}</td>"
                        f"<td>{e(f'{first}{per(first)}, at {n:,} masses' if first else 'none tried')}</td>"
                        f"<td>{e(('≥ ' if c['ceiling_bound'] else '') + f'{ceiling}{per(ceiling)}' if ceiling else 'none')}"
                        f"</td></tr>")
    if not rows:
        return ""
    first, ceil = pub.get("first_miss_threads"), pub.get("ceiling_threads")
    cell = (lambda p: f"{p['threads']} ({p['per_logical_cpu']:g} per logical CPU)" if p else "–")
    label = (first or ceil or {}).get("system", "")
    rows.append(f"<tr><td class='l'>{e(label)} <small>(published, {e((first or ceil or {}).get('platform', ''))})"
                f"</small></td><td class='l'>other (CFS)</td><td class='l'>–</td><td>{e(cell(first))}"
                f"</td><td>{e(cell(ceil))}</td></tr>")
    return ("<h4>Pretest at 0.5 ms (2 kHz): thread counts, beside the published ones</h4><div class='wide'><table>"
            "<tr><th class='l'>system</th><th class='l'>policy, solver</th><th class='l'>threads tried</th>"
            "<th>first miss at the smallest model (threads)</th><th>thread ceiling (threads)</th></tr>"
            + "".join(rows) + "</table></div><p class='note'>First miss: the fewest threads whose pretest "
            "missed a deadline at its smallest model (one mass a thread at the least). Thread ceiling: the "
            "largest thread count tried below the fewest at which most sizes tried missed (“≥”: no count tried "
            "missed at most sizes). The published figures are the study's Linux pretest on 12 logical CPUs; "
            "per logical CPU is the figure to set beside another machine's (docs/tire.md).</p>")


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
                          e(f"Green 0: every step met its deadline; dark hatched 'miss': at least one missed, "
                            f"in any run of the point (the sweep repeats a late probe to show whether its misses "
                            f"recur; a repeat that held does not undo the miss). {how}.")
                          + (flag("fallback: not real-time") if fb else "") + repeats_note(points, mode, period,
                                                                                          solver, policy)
                          + stalls_note(mine)))
        out.append(figure(heatmap(f"{name}, soft, at {at}: missed steps ({solver}, {policy})", rows,
                                  [f"{n:,}" for n in soft_masses], soft_grid, "threads", "masses n"),
                          e(f"Missed deadlines per point (darker = more), its first run's count, from the runs "
                            f"that ran every step (repeats are listed under the hard map); "
                            f"'·': no such run at that point (one cut by its time limit, or none made). "
                            f"The bisection's probes, which stop at the first miss, are in the hard map only. "
                            f"{how}.")))
        out.append("</div>")
    return out


def stalls_note(points) -> str:
    """The late points whose late steps a host stall overlapped (the observer saw the
    whole machine stopped): how many of each point's late steps, every run listed."""
    hit = [f"{p.threads} threads × {p.masses:,}: {p.late_in_stalls:,} of {p.misses:,}"
           for p in sorted(points, key=lambda p: (p.threads, p.masses))
           if p.misses and isinstance(p.late_in_stalls, int) and p.late_in_stalls > 0]
    return (f"<br><small>Late steps in host stalls (the observer saw the whole machine stopped while they ran; "
            f"still misses): {e('; '.join(hit))}.</small>") if hit else ""


def repeats_note(points, mode: str, period: float, solver: str, policy: str) -> str:
    """The points run more than once, with every run's misses (first run first)."""
    runs = map_attempts(points, period, mode).get((solver, policy), {})
    again = [f"{t} threads × {n:,}: {' then '.join(str(m) for m in misses)} missed"
             for (t, n), misses in sorted(runs.items()) if len(misses) > 1]
    return f"<br><small>Repeated points: {e('; '.join(again))}.</small>" if again else ""


def render_tire_cost(runs: list[Run]) -> str:
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
            out.append(f"<h4>Run {e(run.id)}, {e(system_label(run))} · {e(policy)}</h4><p class='note'>Ts = r·(ops·Tipc + "
                       "(2e+1)·Tspring + e·Tmass) + (Nswitch + Nwait)·Tswitch, r = threads per CPU, ops = 6e + 4 lock "
                       "operations per share; Nswitch: the unplanned (involuntary) switches, eq. 2's; Nwait: the "
                       f"waits (voluntary switches less the sleeps until the next period), per step and CPU. Measured by the solver: {e(spread)}. Tswitch (step time outside "
                       f"the timed phases per switch): {e('–' if tsw is None else us(tsw) + ' µs')}"
                       + (e(f"; the switch microbenchmark gives {us(micro, 2)} µs") if micro is not None else "")
                       + f". Median prediction error (each configuration from the others): "
                       f"<b>{m['median_error']:.0%}</b> for the median step time"
                       + (f", <b>{m['median_error_p99']:.0%}</b> for its 99th percentile (the median times the "
                          f"others' p99/p50, ×{m['tail_factor']:.2f})" if m.get("median_error_p99") is not None
                          else "") + ".</p>")
            out.append("<table><tr><th>masses</th><th>threads</th><th>Nswitch</th><th>Nwait</th><th>measured Ts (median, µs)"
                       "</th><th>predicted Ts (µs)</th><th>error</th><th>measured p99 (µs)</th>"
                       "<th>predicted p99 (µs)</th><th>error</th></tr>")
            for r in m["predictions"]:
                p99 = (f"<td>{us(r['measured_p99_ns'])}</td><td>{us(r['predicted_p99_ns'])}</td>"
                       f"<td>{r['p99_error']:.0%}</td>" if r.get("p99_error") is not None
                       else "<td>–</td><td>–</td><td>–</td>")
                out.append(f"<tr><td>{r['masses']:,}</td><td>{r['threads']}</td><td>{r['nswitch']:.2f}</td>"
                           f"<td>{r.get('nwait', 0):.2f}</td>"
                           f"<td>{us(r['measured_ns'])}</td><td>{us(r['predicted_ns'])}</td>"
                           f"<td>{r['error']:.0%}</td>{p99}</tr>")
            out.append("</table>")
    return "".join(out) or ("<p>No tire runs of the locked solver with timed phases (at least two "
                            "configurations per policy) in these runs.</p>")


def fmt_value(v) -> str:
    return f"{v:,.4g}" if isinstance(v, float) else str(v)
