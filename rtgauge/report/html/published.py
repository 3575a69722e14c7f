"""The published evaluations, redone: each published study's table with the
measurement of the same method beside it, the behaviour verdicts beside the
published ones, and the systems' latency histograms in one figure."""

from __future__ import annotations

from rtgauge.analysis.run.rows import system_label
from rtgauge.analysis.studies.conclusions import HOLDS, check_conclusions
from rtgauge.analysis.studies.published import (beside_text, overlay_curves, published_verdicts, studies,
                                       systems_of)
from rtgauge.analysis.studies.published import shown as cell_shown
from rtgauge.report.html.page import e, figure, flag
from rtgauge.report.numbers import fmt_group
from rtgauge.report.svg import overlaid_histograms
from rtgauge.records import Run


def published_cell(study, stats: dict) -> str:
    """A published system's figures in the study's own layout (µs)."""
    def pv(stat):
        p = stats.get(stat)
        if p is None:
            return None, ""
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(p.unit)
        return (None if p.value is None or scale is None else p.value * scale), p.bound
    text = {}
    for stat in study.stats:
        v, bound = pv(stat)
        text[stat] = "–" if v is None else f"{bound}{v:,g}"   # as published: its own digits
    if "value" in stats and not any(s in stats for s in study.stats):   # a single figure (IRQ-S-SUS)
        v, bound = pv("value")
        return e(f"{bound}{v:,g}" if v is not None else stats["value"].text) + (
            f" <small>({e(stats['value'].note)})</small>" if stats["value"].note else "")
    return layout_text(study, text)


def layout_cell(study, values: list, bounds: list | None = None) -> str:
    """values in the order of study.stats, laid out as the study prints them; one
    number of decimals for the cell (so a max never reads below its average)."""
    return layout_text(study, dict(zip(study.stats, fmt_group(values, prefixes=bounds))))


def layout_text(study, text: dict) -> str:
    text = {k: e(v) for k, v in text.items()}     # a bound such as "<0.1" is text, not markup
    if study.layout == "max (avg ± σ)":
        return f"<b>{text['max']}</b> ({text['avg']} ± {text['stddev']})"
    return " / ".join(f"<b>{text[s]}</b>" if s == "max" else text[s] for s in study.stats)


def measured_cell(study, placed: dict) -> str:
    """The cell of one run, with the analogues set beside the row (never compared)."""
    cell = placed_cell(study, placed)
    extra = "".join(f"<br><small class='info'>analogue, not compared: {e(placed_b['measurement'])}, "
                    f"{e(beside_text(placed_b))}</small>" for placed_b in placed.get("beside") or [])
    return cell[:-len("</td>")] + extra + "</td>" if extra else cell


def placed_cell(study, placed: dict) -> str:
    status = placed.get("status")
    if status == "compared":
        st = placed["stats"]
        caveat = (f"<br><small class='warn'>{e(placed['max_note'])}</small>"
                  if placed.get("max_comparable") is False else "")
        return (f"<td>{layout_cell(study, [st.get(k) for k in study.stats])}<br><small>{e(placed['measurement'])} "
                f"{e(placed['metric'])}{' (' + e(placed['tool']) + ')' if placed.get('tool', 'engine') != 'engine' else ''}"
                f", {st.get('count') or 0:,} samples</small>{caveat}</td>")
    if status == "different method":
        name = f"{e(placed['measurement'])}: " if placed.get("measurement") else ""
        return f"<td class='l info'><small>{name}{e(placed.get('note'))}; not compared</small></td>"
    return f"<td class='l info'><small>not measured{e(' (' + placed['condition'] + ')') if placed.get('condition') else ''}</small></td>"


def render_conclusions(runs, sources: set[str]) -> str:
    """The reproduced studies' stated conclusions as checks on these runs."""
    titles = {}
    for study, _ in studies(runs):
        titles[study.source] = study.title
    checks = check_conclusions(runs, sources)
    if not checks:
        return ""
    rows = []
    for c in checks:
        cls = "ok" if c.status == HOLDS else ("bad" if c.status == "does not hold" else "info")
        per = "; ".join(f"run {rid}: {v['status']} ({v['detail']})" for rid, v in c.per_run.items()
                        if v["status"] != "not decidable")
        why = per or c.detail
        if not c.decided:
            why = f"{c.detail} ({c.reason})" + (f"; decided by: {c.conclusion.decide}" if c.conclusion.decide else "")
        rows.append(f"<tr><td class='l'>{e(titles.get(c.conclusion.source, c.conclusion.source))}</td>"
                    f"<td class='l'>{e(c.conclusion.claim)} <small>({e(c.conclusion.where)})</small></td>"
                    f"<td class='l'><span class='{cls}'>{e(c.status)}</span></td>"
                    f"<td class='l'><small>{e(why)}</small></td></tr>")
    return ("<h3>The studies' conclusions, checked on these runs</h3><div class='wide'><table><tr>"
            "<th class='l'>study</th><th class='l'>conclusion</th><th class='l'>here</th><th class='l'>figures</th></tr>"
            + "".join(rows) + "</table></div><p class='note'>A conclusion that compares systems is checked on every "
            "pair of a PREEMPT_RT run and a mainline run in the report; a run under an instruction-set emulator "
            "(its facts say emulated) is no witness of a timing claim and is left out; a virtual machine is named "
            "(docs/studies.md).</p>")


def render_published(runs: list[Run]) -> str:
    out = ["<p class='note'>Each published row sits beside the measurement whose method matches (docs/method.md); "
           "where only a measurement of a different method exists it is named and not compared. Published figures "
           "come from other hardware and years: compare orders of magnitude and ratios between systems, not single "
           "values. µs throughout.</p>"]
    found = studies(runs)
    for study, rows in found:
        systems = systems_of(rows)
        shown = [r for r in runs if any(cell_shown(row.placed.get(r.id, {}))
                                        for row in rows)]
        platform = next((p.platform for row in rows for st in row.published.values() for p in st.values()), "")
        measured = [row for row in rows if any(cell_shown(row.placed.get(r.id, {}))
                                               for r in runs)]
        left_out = len(rows) - len(measured)
        rows = measured
        out.append(f"<h3 id='pub-{e(study.source)}'>{e(study.title)}</h3><p class='note'>Published on "
                   f"{e(platform)}; every cell reads {e(study.layout)} µs."
                   + (f" {left_out} published row{'s' if left_out != 1 else ''} that these runs did not measure "
                      f"{'are' if left_out != 1 else 'is'} left out (every row: `rtgauge show --json`, under "
                      "\"published\")." if left_out else "") + "</p>")
        out.append("<div class='wide'><table><tr><th class='l'>test</th><th class='l'>condition</th>"
                   + "".join(f"<th class='ref'>{e(s)}</th>" for s in systems)
                   + "".join(f"<th>{e(system_label(r))}</th>" for r in shown) + "</tr>")
        group = None
        for row in rows:
            if row.method.group != group:
                group = row.method.group
                out.append(f"<tr><th class='l' colspan='{2 + len(systems) + len(shown)}'>{e(group)}: "
                           f"<small>published: {e(row.method.what)}; rtgauge: {e(row.method.ours or 'no counterpart')}"
                           f"</small></th></tr>")
            cond = row.condition + (f" → {row.our_condition}" if row.our_condition not in (None, row.condition) else "")
            cells = "".join(f"<td class='ref'>{published_cell(study, row.published[s])}</td>" if s in row.published
                            else "<td class='ref'>–</td>" for s in systems)
            mine = "".join(measured_cell(study, row.placed.get(r.id, {})) for r in shown)
            out.append(f"<tr><td class='l'>{e(row.test)}</td><td class='l'>{e(cond)}</td>{cells}{mine}</tr>")
        out.append("</table></div>")
    if not found:
        out.append("<p>No measurement in these runs reproduces a published one.</p>")
    if found:
        out.append(render_conclusions(runs, {study.source for study, _ in found}))
    vrows = published_verdicts(runs)
    if vrows:
        out.append("<h3>Behaviour verdicts beside the published ones</h3><div class='wide'><table><tr>"
                   "<th class='l'>test</th><th class='l'>verdict</th><th class='l'>published</th>"
                   + "".join(f"<th class='l'>{e(system_label(r))}</th>" for r in runs) + "</tr>")
        for v in vrows:
            cells = []
            for r in runs:
                c = v["cells"].get(r.id)
                if c is None:
                    cells.append("<td class='l'>–</td>")
                    continue
                finding = "" if c["agrees"] else flag("disagrees with the published verdict")
                cells.append(f"<td class='l'><span class='{'ok' if c['pass'] else 'bad'}'>"
                             f"{'pass' if c['pass'] else 'FAIL'}</span>{finding} <small>{e(c['detail'])}</small></td>")
            out.append(f"<tr><td class='l'>{e(v['test'])}</td><td class='l'>{e(v['verdict'])}</td>"
                       f"<td class='l'>{'pass' if v['published_pass'] else 'FAIL'}: {e(v['published'])}</td>"
                       f"{''.join(cells)}</tr>")
        out.append("</table></div><p class='note'>A disagreement is a finding about the system measured here "
                   "(or about the published test's primitive), not an error of the report.</p>")
    overlays = overlay_curves(runs)
    if overlays:
        out.append("<h3>Wake-up latency of the systems in one figure</h3><div class='figs'>")
        for cond, curves in overlays.items():
            svg = overlaid_histograms(f"Wake-up latency, {cond}: every system",
                                      [(f"run {r.id}: {r.hostname}", ti.bins, ti.max)
                                       for r, ti in curves])
            out.append(figure(svg, e(f"Histogram of every wake-up (Ti) of each run's first latency job under "
                                     f"condition {cond}, one curve per system (run id and host: "
                                     "the systems table names each), as the cyclictest study draws its systems; the "
                                     "dashed lines are each curve's maximum.")))
        out.append("</div>")
    return "".join(out)
