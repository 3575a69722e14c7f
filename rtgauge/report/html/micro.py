"""The microbenchmarks section: avg/max per system, Rhealstone, behaviour verdicts,
other scalar figures and the timestamp cost."""

from __future__ import annotations

from rtgauge.analysis.run.rows import system_label
from rtgauge.analysis.studies.micro import micro_rows, micro_scalars, rhealstone, verdict_rows
from rtgauge.analysis.studies.published import STUDIES
from rtgauge.report.html.page import e, num
from rtgauge.report.numbers import us_group
from rtgauge.records import Run


def render_micro(runs: list[Run]) -> str:
    rows = micro_rows(runs)
    out = []
    if rows:
        ids = [r.id for r in runs if any(r.id in row.cells for row in rows)]
        shown = [r for r in runs if r.id in ids]
        out.append("<div class='wide'><table><tr><th class='l' rowspan='2'>test</th><th class='l' rowspan='2'>condition</th>"
                   + "".join(f"<th colspan='2'>{e(system_label(r))}</th>" for r in shown)
                   + "<th class='ref' rowspan='2'>published beside it<br>(same method)</th>"
                   + "</tr><tr>" + "<th>avg µs</th><th>max µs</th>" * len(shown) + "</tr>")
        for row in rows:
            cells = []
            for r in shown:
                c = row.cells.get(r.id)
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
                       "rtgauge/analysis/studies/rhealstone.py):<br>" + "<br>".join(e(x) for x in lines) + "</p>")
    vrows = verdict_rows(runs)
    if vrows:
        shown = [r for r in runs if any(r.id in v["cells"] for v in vrows)]
        out.append("<h3>Behaviour verdicts</h3><div class='wide'><table><tr><th class='l'>test</th>"
                   "<th class='l'>verdict</th><th class='l'>condition</th>"
                   + "".join(f"<th class='l'>{e(system_label(r))}</th>" for r in shown) + "</tr>")
        for v in vrows:
            cells = []
            for r in shown:
                c = v["cells"].get(r.id)
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
        for m in run.measurements:
            mono, tsc = m.scalar("timestamp_monotonic"), m.scalar("timestamp_tsc")
            if mono is not None:
                out.append(f"<p class='note'>Timestamp cost on {e(system_label(run))}: CLOCK_MONOTONIC {num(mono)} ns, "
                           f"TSC {num(tsc) + ' ns' if tsc is not None else 'unavailable'} (published bound: &lt; 100 ns); "
                           "sub-microsecond figures above include about one timestamp.</p>")
    return "".join(out) or "<p>No microbenchmarks in these runs.</p>"


def published_pointer(rows) -> str:
    """The studies whose figures of the same method sit beside this row, as links."""
    titles = {st.source: st for st in STUDIES}
    seen = []
    for p in rows:
        if p.source not in seen:
            seen.append(p.source)
    return "<br>".join(f"<a href='#pub-{e(src)}'>{e(titles[src].title.split(' (')[0] if src in titles else src)}</a>"
                       for src in seen) or "–"
