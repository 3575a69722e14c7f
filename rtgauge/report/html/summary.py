"""The summary section: the rating and headline figures per system."""

from __future__ import annotations

from rtgauge.analysis.run.rows import system_label
from rtgauge.analysis.run.tire import held_text, period_text
from rtgauge.analysis.run.headline import CROSS_CHECK_FACTOR, MIN_RATED_CYCLES, SOFT_MISS_RATIO, SOFT_WORST_US
from rtgauge.analysis.run.systems import emulation_note
from rtgauge.report.html.page import e, flag, num
from rtgauge.report.numbers import misses_text
from rtgauge.records import Run


def render_verdicts(runs: list[Run], verdicts: list) -> str:
    """The answer against the job's budget, per run: yes / no / not enough evidence,
    the margin, and the evidence in plain sentences."""
    out = []
    for run, v in zip(runs, verdicts):
        cls = {"yes": "ok", "no": "bad"}.get(v.answer, "warn")
        out.append(f"<div class='verdict'><p><b>{e(system_label(run))}:</b> <span class='{cls} answer'>"
                   f"{e(v.headline)}</span></p><ul>")
        for j in v.jobs:
            out.append(f"<li>{e(j.name)} ({e(j.tool)}, {e(j.condition)}): <b>{e(j.answer)}</b> — {e(j.why)}</li>")
        for text in v.reasons:
            if not any(text.startswith(f"{j.name}: ") for j in v.jobs):
                out.append(f"<li class='warn'>{e(text)}</li>")
        for text in v.incomplete:
            out.append(f"<li class='bad'>incomplete: {e(text)}; the verdict fails closed</li>")
        out.append("</ul></div>")
    out.append("<p class='note'>Exceedances are counted from each job's histogram; the rate bounds are exact "
               "binomial (Clopper–Pearson, one-sided 95 %) at the run's length; the credible worst case is the "
               "probable worst case where its applicability checks pass (docs/verdict.md).</p>")
    return "".join(out)


def chip_text(flag_text: str) -> str:
    """A rating flag as a chip: its head, and for a cross-check the job it names."""
    if flag_text.startswith("cross-check disagrees:"):
        return flag_text.split(" worst case")[0]
    return flag_text.split(":")[0]


def render_summary(runs: list[Run], heads: list[dict], budget_us: float, verdicts: list | None = None) -> str:
    if not runs:
        return ""
    out = [render_verdicts(runs, verdicts) if verdicts else "",
           "<div class='wide'><table><tr><th class='l'>system</th><th class='l'>rating</th>"
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
        flags += [flag(chip_text(text)) for text in r.flags
                  if not (note and text.startswith(("virtualised", "emulated")))]   # the note said it
        rating = (f"<span class='stars'>not rated</span><br><small>the figures alone would read "
                  f"{e(r.unrated_class)}</small>" + "".join(f"<br><small>• {e(x)}</small>" for x in r.flags)
                  if r.flags else
                  f"<span class='stars' title='{e(r.klass)}'>{e(r.glyphs)}</span><br>{e(r.klass)}"
                  + "".join(f"<br><small>{e(x)}</small>" for x in r.reasons))
        out.append(f"<tr><td class='l'>{e(system_label(run))}</td><td class='l'>{rating}"
                   + f"</td><td><b>{num(h['worst_idle_us'])}</b></td><td><b>{loaded}</b></td>"
                   f"<td>{e(misses_text(h['misses'], h['skipped']))}</td><td class='l'>{tire}</td>"
                   f"<td class='l'>{''.join(flags) or 'none'}</td></tr>")
    out.append("</table></div>")
    out.append(f"<p class='note'>Rating, in the spirit of the published five-star scale (docs/report.md): "
               f"★★★★★ hard real-time out of the box — zero missed deadlines and worst-case wake-up latency ≤ "
               f"{budget_us:,.0f} µs in every latency job, idle and loaded, on a system without real-time tuning; "
               f"★★★★ the same after tuning (isolated CPUs, nohz_full, tuned profile, …); ★★★ soft real-time out of "
               f"the box — missed deadlines ≤ {SOFT_MISS_RATIO:.1%} of cycles and worst case ≤ {SOFT_WORST_US / 1000:g} ms "
               f"(one 100 Hz period); ★★ soft after tuning; ★ real-time scheduling works but not even soft real time; "
               f"no star: measured without real-time scheduling. Not rated: the run is too short for the claim "
               f"(fewer than {MIN_RATED_CYCLES:,} cycles in a latency job), measured idle only, virtualised or "
               f"emulated, or the cyclictest cross-check disagrees with our engine by more than "
               f"{CROSS_CHECK_FACTOR:g}× (the worse figure is then used). Worst cases are our engine's (cyclictest is the "
               f"cross-check); the tire column is the published headline: the largest model (masses) whose every "
               f"step met its deadline, at the period named (the study's is 10 ms, 100 Hz).</p>")
    return "".join(out)
