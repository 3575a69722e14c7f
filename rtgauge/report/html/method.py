"""The method section: how every job of every run was measured."""

from __future__ import annotations

from rtgauge.analysis.run.rows import latency_row, system_label
from rtgauge.report.html.page import e, flag, num
from rtgauge.records import Run


def render_method(runs: list[Run]) -> str:
    out = []
    for run in runs:
        out.append(f"<h3>{e(system_label(run))}</h3><p class='note'>Profile {e(run.profile)}, "
                   f"started {e(run.started_at)}, status {e(run.status)}"
                   + (f" — {e(run.note)}" if run.note else "") + "; command: "
                   f"<span class='cmd'>{e(' '.join(str(a) for a in run.argv))}</span></p>")
        out.append("<div class='wide'><table><tr><th class='l'>job</th><th class='l'>tool</th><th class='l'>test</th>"
                   "<th class='l'>condition</th><th>duration s</th><th class='l'>policy / priority</th>"
                   "<th class='l'>CPUs</th><th class='l'>result</th><th class='l'>options</th></tr>")
        for m in run.measurements:
            env, params = m.env, m.params
            result = "ok" if m.ok else f"failed: {m.error}"
            flags = ""
            if latency_row(m) and m.fallback:
                flags += flag("fallback: not real-time")
            if m.stopped_early:
                flags += flag(m.stopped_early)
            opts = ", ".join(f"{k}={v}" for k, v in params.items() if v not in (None, False) and k != "out")
            out.append(f"<tr><td class='l'>{e(m.label)}</td><td class='l'>{e(m.tool)}</td>"
                       f"<td class='l'>{e(m.test)}</td><td class='l'>{e(m.condition)}</td>"
                       f"<td>{num(m.duration_s)}</td><td class='l'>{e(env.get('policy'))} / "
                       f"{e(env.get('priority'))}</td><td class='l'>{e(env.get('cpus'))}</td>"
                       f"<td class='l {'ok' if m.ok else 'bad'}'>{e(result)}{flags}</td>"
                       f"<td class='l cmd'>{e(opts)}</td></tr>")
        out.append("</table></div>")
    return "".join(out) or "<p>No runs.</p>"
