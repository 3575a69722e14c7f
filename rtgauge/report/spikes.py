"""Why it spiked, shown: the terminal lines of `show` and the report's section after
the latency plots (docs/attribution.md). Data: env.attribution of each latency
measurement, made by rtgauge.analysis.spikes during `run --attribute`."""

from __future__ import annotations

from html import escape as h

from rich.console import Console
from rich.table import Table

from rtgauge.report.safe import markup as escape

COST_NOTE = ("Tracing has a cost of its own: docs/performance.md (\"Attribution tracing\") gives the wake-up "
             "latency's p99.99 and maximum with and without it on this machine.")


def attributions(runs: list) -> list[tuple[object, str, dict]]:
    """(run id, measurement name, env.attribution) for every measurement that has one."""
    out = []
    for run in runs:
        for m in run.measurements:
            a = (m.env or {}).get("attribution")
            if isinstance(a, dict):
                out.append((run.id, m.label or m.test or "?", a))
    return out


def rate_text(a: dict) -> str:
    r = a.get("rate") or {}
    if r.get("per_hour") is None:
        return ""
    mtbs = r.get("mean_time_between_s")
    return (f"{r['per_hour']:,.1f} per hour (95% exact Poisson interval {r['low']:,.1f} to {r['high']:,.1f})"
            + (f", one every {mtbs:,.3g} s on average" if mtbs else ""))


def periodic_text(a: dict) -> str:
    p = a.get("periodicity") or {}
    if not p.get("tested"):
        return f"periodicity not tested ({p.get('why', 'no spikes')})"
    if p.get("periodic"):
        return f"periodic: every {p['period_s'] * 1000:,.3g} ms (p = {p['p_value']:.2g})"
    return f"not periodic (best period {p['period_s'] * 1000:,.3g} ms, p = {p['p_value']:.2g})"


def headline(a: dict) -> str:
    return (f"{a['spikes']:,} wake-up(s) above {a['threshold_us']:,.1f} µs ({a['threshold_from']}) "
            f"in {a['samples']:,} samples; {a['attributed']:,} attributed")


def print_attribution(console: Console, runs: list) -> None:
    for run_id, name, a in attributions(runs):
        if a.get("unavailable"):
            console.print(f"Why it spiked ({escape(name)}): not traced: {escape(str(a['unavailable']))}")
            continue
        console.print(f"[bold]Why it spiked[/] ({escape(name)}): {escape(headline(a))}")
        if a.get("spikes"):
            console.print(f"  rate: {escape(rate_text(a))}; {escape(periodic_text(a))}")
        if a.get("lost_events"):
            console.print(f"  [yellow]the trace lost {a['lost_events']:,} events: some windows are incomplete[/]")
        if a.get("sources"):
            table = Table(title="Causes of the wake-ups above the threshold (what held the CPU between the "
                                "deadline and the wake-up)", title_justify="left")
            for col in ("source", "kind", "caused", "seen in", "total µs", "worst µs"):
                table.add_column(col, justify="left" if col in ("source", "kind") else "right")
            for r in a["sources"][:10]:
                table.add_row(escape(r["source"]), escape(r["kind"]), f"{r['caused']:,}", f"{r['seen_in']:,}",
                              f"{r['total_us']:,.1f}", f"{r['worst_us']:,.1f}")
            console.print(table)
        w = a.get("worst")
        if w:
            console.print(f"  worst: {w['latency_us']:,.1f} µs on CPU {w['cpu']} (cycle {w['cycle']}), "
                          f"cause {escape(w['cause'])}")
        if a.get("irq_sources"):
            console.print("  interrupts on the measured CPUs: " + escape(", ".join(
                f"{r['source']} ×{r['count']:,} ({r['total_us']:,.1f} µs in all, worst {r['worst_us']:,.1f} µs)"
                for r in a["irq_sources"][:5])))


def render_spikes_html(runs: list) -> str:
    found = attributions(runs)
    if not found:
        return ""
    out = [f"<p class='note'>Every wake-up later than the threshold is attributed to what held its CPU between "
           f"the deadline and the wake-up, from a kernel trace of the whole run (docs/attribution.md). "
           f"{h(COST_NOTE)}</p>"]
    for run_id, name, a in found:
        out.append(f"<h3>Run {h(str(run_id))}: {h(name)}</h3>")
        if a.get("unavailable"):
            out.append(f"<p>Not traced: {h(str(a['unavailable']))}</p>")
            continue
        out.append(f"<p>{h(headline(a))}.")
        if a.get("spikes"):
            out.append(f" Rate: {h(rate_text(a))}; {h(periodic_text(a))}.")
        if a.get("lost_events"):
            out.append(f" The trace lost {a['lost_events']:,} events: some windows are incomplete.")
        out.append("</p>")
        if a.get("sources"):
            out.append("<div class='wide'><table><caption>Causes of the wake-ups above the threshold</caption><tr>"
                       "<th scope='col' class='l'>source</th><th scope='col' class='l'>kind</th><th scope='col'>caused</th>"
                       "<th scope='col'>seen in</th><th scope='col'>total µs</th><th scope='col'>worst µs</th></tr>")
            for r in a["sources"][:12]:
                out.append(f"<tr><td class='l'>{h(r['source'])}</td><td class='l'>{h(r['kind'])}</td><td>{r['caused']:,}</td>"
                           f"<td>{r['seen_in']:,}</td><td>{r['total_us']:,.1f}</td><td>{r['worst_us']:,.1f}</td></tr>")
            out.append("</table></div>")
        w = a.get("worst")
        if w:
            out.append(f"<details><summary>The worst wake-up: {w['latency_us']:,.1f} µs on CPU {w['cpu']}, "
                       f"cause {h(w['cause'])} (its timeline, µs from the deadline)</summary><div class='wide'><table>"
                       "<tr><th scope='col'>µs</th><th scope='col' class='l'>task</th><th scope='col' class='l'>event</th>"
                       "<th scope='col' class='l'>detail</th></tr>")
            for ev in w.get("timeline", []):
                out.append(f"<tr><td>{ev['t_us']:,.1f}</td><td class='l'>{h(ev['task'])}</td><td class='l'>{h(ev['event'])}</td>"
                           f"<td class='l'>{h(ev['detail'])}</td></tr>")
            out.append("</table></div></details>")
        if a.get("irq_sources"):
            out.append("<div class='wide'><table><caption>Interrupts on the measured CPUs (from the trace)</caption><tr>"
                       "<th scope='col'>source</th><th scope='col'>count</th><th scope='col'>total µs</th>"
                       "<th scope='col'>worst µs</th></tr>")
            for r in a["irq_sources"]:
                out.append(f"<tr><td>{h(r['source'])}</td><td>{r['count']:,}</td><td>{r['total_us']:,.1f}</td>"
                           f"<td>{r['worst_us']:,.1f}</td></tr>")
            out.append("</table></div>")
    return "".join(out)
