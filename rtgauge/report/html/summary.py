"""The summary section: the rating and headline figures per system."""

from __future__ import annotations

from rtgauge.analysis import system_label
from rtgauge.analysis.tire import held_text, period_text
from rtgauge.analysis.headline import SOFT_MISS_RATIO, SOFT_WORST_US
from rtgauge.analysis.systems import emulation_note
from rtgauge.report.html.page import e, flag, num


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
        note = emulation_note(run.system)
        if note:
            flags.append(flag(note))
        if run.status != "complete":
            flags.append(flag(f"run {run.status}"))
        failed = sum(not m.ok for m in run.measurements)
        if failed:
            flags.append(flag(f"{failed} job(s) failed"))
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
