"""Host stalls, shown: a terminal table and an HTML section (docs/report.md
"Host stalls"). Per measurement: what the engine's non-measuring observer saw,
and for every figure a stall touched the average with all samples beside the
average without the stall-touched samples, each labelled; the maximum is always
the true maximum of all samples. Data from rtgauge.analysis.run.stalls."""

from __future__ import annotations

from html import escape as h

from rich.console import Console
from rich.table import Table

from rtgauge.analysis.run.stalls import stall_figures, stall_summary
from rtgauge.records import Measurement, Run
from rtgauge.report.numbers import us_fixed
from rtgauge.report.safe import markup as escape

NONE = "-"      # a figure not measured, in these tables

ALL = "avg, all samples"
WITHOUT = "avg without stall-touched samples"
NOTE = ("A host stall is a gap the engine's non-measuring observer thread saw on its own clock at the "
        "same moment (on another CPU); a sample is stall-touched when its time span contains one. "
        "Interference on the measured CPU alone is not a host stall. The maximum is the true maximum "
        "of all samples, stalls included.")


def stall_rows(runs: list[Run]) -> list[dict]:
    """One row per measurement with observer data: the summary and its touched figures.
    The tire sweep's probes (hundreds in a full study) are summed up instead
    (probe_stalls)."""
    rows = []
    for run in runs:
        for m in run.measurements:
            s = stall_summary(m)
            if s is None or m.is_sweep_probe:
                continue
            rows.append({"run": run.id, "measurement": m.label or m.test or "?",
                         "summary": s, "figures": stall_figures(m, touched_only=True)})
    return rows


def probe_stalls(run: Run) -> str | None:
    """The host stalls the observer saw during the tire sweep's probes, in one sentence
    (None when no probe recorded the observer)."""
    sums = [s for s in (stall_summary(m) for m in run.measurements if m.is_sweep_probe) if s is not None]
    if not sums:
        return None
    observed = [s for s in sums if s["observed"]]
    hit = [s for s in observed if s["count"]]
    text = (f"Host stalls in the tire sweep's probes: seen in {len(hit):,} of {len(observed):,} observed probes"
            + (f", {sum(s['total_ms'] for s in hit):,.6g} ms in all, longest {max(s['longest_ms'] for s in hit):g} ms"
               if hit else ""))
    if len(observed) < len(sums):
        text += f"; not observed in {len(sums) - len(observed):,}"
    return text + " (each probe's in `show --json`)"


def print_stalls(console: Console, runs: list[Run]) -> None:
    """Nothing when no measurement recorded the observer; otherwise the stalls seen and,
    for the touched figures, both averages; the sweep's probes in one line a run."""
    for run in runs:
        line = probe_stalls(run)
        if line:
            console.print(escape(line))
    rows = stall_rows(runs)
    if not rows:
        return
    seen = [r for r in rows if r["summary"]["observed"] and r["summary"]["count"]]
    unobserved = [r for r in rows if not r["summary"]["observed"]]
    if not seen:
        console.print(f"Host stalls: none seen in {len(rows) - len(unobserved)} observed measurement(s)"
                      + (f"; not observed in {len(unobserved)} ({escape(str(unobserved[0]['summary']['reason']))})"
                         if unobserved else "") + ".")
        return
    several = len(runs) > 1
    for r in seen:
        sm = r["summary"]
        console.print(f"Host stalls in {'run ' + str(r['run']) + ' ' if several else ''}{escape(r['measurement'])}: "
                      f"{sm['count']} seen by the observer on CPU {sm['cpu']}, {sm['total_ms']:g} ms in all, "
                      f"longest {sm['longest_ms']:g} ms")
    table = Table(title="Averages (µs) with all samples and without the samples a detected host stall touched",
                  title_justify="left")
    for col in ("measurement", "figure", "samples", "stall-touched", ALL, WITHOUT, "max, all samples"):
        table.add_column(col, justify="left" if col in ("measurement", "figure") else "right", no_wrap=True)
    for r in seen:
        label = (f"{r['run']}: " if several else "") + r["measurement"]
        for f in r["figures"]:
            avg_all, avg_without, max_all = (us_fixed(v, 3, NONE) for v in (f.avg_all, f.avg_without, f.max_all))
            table.add_row(escape(label), escape(f.metric), f"{f.count:,}", str(f.touched), avg_all, avg_without,
                          f"[bold]{max_all}[/]")
    if table.row_count:
        console.print(table)
    if unobserved:
        console.print(f"  host stalls not observed in {len(unobserved)} measurement(s): "
                      f"{escape(str(unobserved[0]['summary']['reason']))}")


def render_stalls_html(runs: list[Run]) -> str:
    """The body of the report's host-stalls section."""
    rows = stall_rows(runs)
    probes = "".join(f"<p>{h(line)}</p>" for line in (probe_stalls(r) for r in runs) if line)
    if not rows:
        return probes or "<p>No measurement recorded host stalls (the engine's observer is newer than these runs).</p>"
    out = [probes + f"<p class='note'>{h(NOTE)}</p><table><tr><th>run</th><th>measurement</th><th>host stalls</th>"
           f"<th>figure</th><th>samples</th><th>stall-touched</th><th>{h(ALL)} (µs)</th>"
           f"<th>{h(WITHOUT)} (µs)</th><th>max, all samples (µs)</th></tr>"]
    for r in rows:
        s = r["summary"]
        if not s["observed"]:
            stalls = f"not observed: {s['reason']}"
        else:
            stalls = "none" if not s["count"] else (f"{s['count']}, {s['total_ms']:g} ms in all, "
                                                   f"longest {s['longest_ms']:g} ms")
        head = f"<tr><td>{h(str(r['run']))}</td><td>{h(r['measurement'])}</td><td>{h(stalls)}</td>"
        if not r["figures"]:
            out.append(head + "<td colspan='6'>no sample touched</td></tr>")
            continue
        for f in r["figures"]:
            avg_all, avg_without, max_all = (us_fixed(v, 3, NONE) for v in (f.avg_all, f.avg_without, f.max_all))
            out.append(head + f"<td>{h(f.metric)}</td><td>{f.count:,}</td><td>{f.touched}</td>"
                       f"<td>{avg_all}</td><td>{avg_without}</td><td><b>{max_all}</b></td></tr>")
    out.append("</table>")
    return "".join(out)


def stalls_json(m: Measurement) -> dict | None:
    """show --json: the observer's summary and every figure's two averages."""
    s = stall_summary(m)
    if s is None:
        return None
    return {**s, "note": NOTE, "figures": [f.to_json() for f in stall_figures(m)]}
