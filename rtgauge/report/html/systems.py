"""The systems section: facts and doctor checks side by side, differences marked."""

from __future__ import annotations

from rtgauge.analysis.run.systems import doctor_rows, fact_rows
from rtgauge.report.html.page import e, run_headers
from rtgauge.records import Run


def render_systems(runs: list[Run]) -> str:
    if not runs:
        return ""
    facts = fact_rows(runs)
    differ = sum(1 for row in facts if row["differs"])
    out = [f"<details><summary>Facts: {len(facts)} rows" + (f", {differ} differ between the systems" if differ else "")
           + "</summary><div class='wide'><table>", run_headers(runs, "fact")]
    for row in facts:
        cls = " class='diff'" if row["differs"] else ""
        cells = "".join(f"<td class='l{' cmd' if row['fact'] == 'kernel command line' else ''}'>{e(v)}</td>"
                        for v in row["values"])
        out.append(f"<tr{cls}><th class='l'>{e(row['fact'])}</th>{cells}</tr>")
    out.append("</table></div>")
    if len(runs) > 1:
        out.append("<p class='note'>Rows marked ≠ (highlighted) differ between the systems.</p>")
    out.append("</details>")
    drows = doctor_rows(runs)
    passing = [row for row in drows if all(c is None or c.get("status") in ("ok", "info") for c in row["cells"])]
    failing = [row for row in drows if row not in passing]
    if failing:
        out.append("<h3>Doctor: what stands between each system and real time</h3>")
        out.append(doctor_table(runs, failing))
    if passing:
        out.append(f"<details><summary>Doctor: {len(passing)} passing or informational checks</summary>"
                   + doctor_table(runs, passing) + "</details>")
    return "".join(out)


def doctor_table(runs: list[Run], drows: list[dict]) -> str:
    out = ["<div class='wide'><table>", run_headers(runs, "check")]
    for row in drows:
        cls = " class='diff'" if row["differs"] else ""
        cells = []
        for c in row["cells"]:
            if c is None:
                cells.append("<td class='l'>–</td>")
                continue
            st = str(c.get("status"))
            cells.append(f"<td class='l'><span class='{e(st)}'>{e(st)}</span>: {e(c.get('value'))}"
                         + (f"<br><small>{e(c.get('advice'))}</small>" if c.get("advice") and st != "ok" else "")
                         + "</td>")
        out.append(f"<tr{cls}><th class='l'>{e(row['check'])}</th>{''.join(cells)}</tr>")
    out.append("</table></div>")
    return "".join(out)
