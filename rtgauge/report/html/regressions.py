"""The regressions section: what rtgauge compare found against the baseline."""

from __future__ import annotations

from rtgauge.analysis.run.rows import system_label
from rtgauge.report.html.page import e
from rtgauge.records import Run


def render_regressions(runs: list[Run], comparisons: list, tripped: list[str] | None) -> str:
    out = [f"<p class='note'>Baseline: {e(system_label(runs[0]))}. Worse or better means a significant "
           "difference: over the rounds of each job (or, with one round, the uncertainty inside each run), after "
           "the Benjamini-Hochberg adjustment over all figures of the comparison; the interval is the 95 % "
           "interval of the difference (docs/compare.md).</p>"]
    if tripped:
        out.append("<p class='bad'>--fail-on tripped:</p><ul>" + "".join(f"<li>{e(t)}</li>" for t in tripped) + "</ul>")
    for cand, changes in comparisons:
        shown = [c for c in changes if c.call in ("worse", "better")]
        out.append(f"<h3>{e(system_label(cand))}: {sum(c.call == 'worse' for c in changes)} worse, "
                   f"{sum(c.call == 'better' for c in changes)} better of {len(changes)} figures</h3>")
        if not shown:
            out.append("<p>No significant difference.</p>")
            continue
        out.append("<table><tr><th class='l'>figure</th><th>baseline</th><th>candidate</th><th>change</th>"
                   "<th>95 % interval</th><th class='l'>call</th><th class='l'>why</th></tr>")
        for c in sorted(shown, key=lambda c: c.call != "worse"):
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
                       f"{'bad' if c.call == 'worse' else 'ok'}'>{e(c.call)}</td><td class='l'>{e(c.why)}</td></tr>")
        out.append("</table>")
    return "".join(out)
