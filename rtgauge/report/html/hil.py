"""The hardware-in-the-loop section: the loop jobs and the sustained-rate sweep
(figures from rtgauge/analysis/run/hil.py)."""

from __future__ import annotations

from rtgauge.analysis.run.rows import system_label
from rtgauge.analysis.run.cycle import equation_parts
from rtgauge.analysis.run.hil import loop_measurements, loop_row, sustained_measurements, sustained_rows
from rtgauge.report.html.latency import equation_bar, equation_text
from rtgauge.report.html.page import e, figure, num, us
from rtgauge.records import Run


def render_hil(runs: list[Run]) -> str:
    """Per run: every hil job (round trip at the device, Ti/Ts/Tw at the simulation,
    frames lost and deadlines missed) and the sustained-rate sweep."""
    out = []
    for run in runs:
        loops = loop_measurements(run)
        rates = sustained_measurements(run)
        if not loops and not rates:
            continue
        out.append(f"<h3>{e(system_label(run))}</h3>")
        if loops:
            out.append("<div class='wide'><table><tr><th class='l'>job</th><th class='l'>condition</th>"
                       "<th class='l'>step</th><th>period µs</th><th>frames</th><th>lost</th><th>misses</th>"
                       "<th>round trip p50 / p99 / max µs</th><th>Ti p99 / max µs</th><th>Ts avg / max µs</th>"
                       "<th>Tw min µs</th></tr>")
            for m in loops:
                r = loop_row(m)
                (rt50, rt99, rtmax), (ti99, timax), (tsavg, tsmax) = r["round_trip_ns"], r["ti_ns"], r["ts_ns"]
                out.append(f"<tr><td class='l'>{e(r['name'])}</td><td class='l'>{e(r['condition'])}</td>"
                           f"<td class='l'>{e(r['step'])}</td><td>{num(r['period_us'], 0)}</td>"
                           f"<td>{num(r['sent'], 0)}</td><td>{num(r['lost'], 0)}</td>"
                           f"<td><b>{num(r['misses'], 0)}</b></td>"
                           f"<td>{us(rt50)} / {us(rt99)} / <b>{us(rtmax)}</b></td>"
                           f"<td>{us(ti99)} / <b>{us(timax)}</b></td>"
                           f"<td>{us(tsavg)} / {us(tsmax)}</td><td>{us(r['tw_min_ns'])}</td></tr>")
            out.append("</table></div><p class='note'>The device sends a frame every period and expects the "
                       "reply before its next send (else a miss); the simulation wakes on the frame (Ti, from "
                       "the kernel's receive timestamp), runs one step (Ts) and replies; Tw is the slack left "
                       "before the next frame. Lost frames are sequence numbers that never came back.</p>")
            bars = [figure(equation_bar(m), equation_text(m)) for m in loops if equation_parts(m)]
            if bars:
                out.append("<div class='figs'>" + "".join(bars) + "</div>")
        for m in rates:
            out.append("<table><tr><th class='l'>sustained rate: step</th><th>shortest period µs</th>"
                       "<th>rate Hz</th><th class='l'>verdict</th></tr>")
            for tag, period, rate, detail in sustained_rows(m):
                out.append(f"<tr><td class='l'>{e(tag)}</td><td>{num(period, 0)}</td><td>{num(rate, 0)}</td>"
                           f"<td class='l'>{e(detail)}</td></tr>")
            out.append(f"</table><p class='note'>The shortest period at which a run of {num(m.param('frames'), 0)} "
                       f"frames lost no frame and missed no deadline, per step size: "
                       "the counterpart of the published maximum sustained interrupt rate.</p>")
    return "".join(out) or "<p>No hardware-in-the-loop measurements in these runs.</p>"
