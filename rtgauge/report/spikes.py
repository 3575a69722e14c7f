"""Why it spiked, shown: the terminal lines of `show` and the report's section after
the latency plots (docs/attribution.md). Data: env.attribution of each latency
measurement, made by rtgauge.analysis.run.spikes during `run --attribute`."""

from __future__ import annotations

from html import escape as h

from rich.console import Console
from rich.table import Table

from rtgauge.analysis.run.spikes import QUANTILE_RATE
from rtgauge.report.safe import markup as escape

COST_NOTE = ("Tracing has a cost of its own: docs/performance.md (\"Attribution tracing\") gives the wake-up "
             "latency's p99.99 and maximum with and without it on this machine.")
TRACED_COST = "its latency figures include the tracing's own cost (docs/attribution.md, \"The tracing's cost\")"
TRACED_NOTE = f"traced: {TRACED_COST}; measure without --attribute for the machine's figures"
TAIL_SHOWN = 40      # lines of a --trace-threshold-us tail on the terminal (the report has them all)


def _env_entries(runs: list, key: str) -> list[tuple[object, str, dict]]:
    """(run id, measurement name, env[KEY]) for every measurement whose env holds a dict
    under KEY, in the runs' and measurements' order."""
    out = []
    for run in runs:
        for m in run.measurements:
            entry = (m.env or {}).get(key)
            if isinstance(entry, dict):
                out.append((run.id, m.label or m.test or "?", entry))
    return out


def attributions(runs: list) -> list[tuple[object, str, dict]]:
    """(run id, measurement name, env.attribution) for every measurement that has one."""
    return _env_entries(runs, "attribution")


def traced(a: dict) -> bool:
    """The job ran traced (an attribution that is not 'unavailable')."""
    return isinstance(a, dict) and not a.get("unavailable")


def threshold_text(a: dict) -> str:
    src = str(a.get("threshold_from") or "?")
    return "given" if src == "user" else src


def rate_text(a: dict) -> str:
    r = a.get("rate") or {}
    if str(a.get("threshold_from", "")).startswith("p"):     # stored before the rate was left out: still none
        return f"no rate: {QUANTILE_RATE}"
    if r.get("per_hour") is None:
        return f"no rate: {r['why']}" if r.get("why") else ""
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
    return (f"{a['spikes']:,} wake-up(s) above {a['threshold_us']:,.1f} µs ({threshold_text(a)}) "
            f"in {a['samples']:,} samples; {a['attributed']:,} attributed")


def top_causes(a: dict, n: int = 3) -> list[str]:
    """'SOURCE ×caused' of the n sources that caused the most spikes."""
    return [f"{r['source']} ×{r['caused']:,}" for r in (a.get("sources") or []) if r.get("caused")][:n]


def threshold_traces(runs: list) -> list[tuple[object, str, dict]]:
    """(run id, measurement name, env.trace) for every measurement --trace-threshold-us traced."""
    return _env_entries(runs, "trace")


def trace_headline(t: dict) -> str:
    if t.get("unavailable"):
        return f"not traced: {t['unavailable']}"
    if t.get("breached"):
        b = t.get("breach") or {}
        where = f" on CPU {b['cpu']}" if b.get("cpu") is not None else ""
        head = (f"{b.get('max_us', 0):,.1f} µs{where} above the threshold {t.get('threshold_us')} µs: the job "
                "stopped there and the trace's tail was kept")
    else:
        head = f"no wake-up above the threshold {t.get('threshold_us')} µs; the trace's tail was kept"
    return head + f" ({len(t.get('tail') or []):,} lines; {TRACED_COST})"


def print_threshold_traces(console: Console, runs: list) -> None:
    for _, name, t in threshold_traces(runs):
        console.print(f"[bold]Trace kept by --trace-threshold-us[/] ({escape(name)}): {escape(trace_headline(t))}")
        tail = t.get("tail") or []
        if not tail:
            continue
        if t.get("marker"):
            console.print(f"  marker: {escape(str(t['marker']))}")
        shown = tail[-TAIL_SHOWN:]
        console.print(f"  its last {len(shown):,} of {len(tail):,} lines (all of them: the report, or "
                      "`rtgauge show --json`, measurements[].env.trace.tail):")
        for line in shown:
            console.print(str(line), markup=False, highlight=False, soft_wrap=True)


def print_attribution(console: Console, runs: list, brief: bool = False) -> None:
    """Per traced job: its spikes, rate, causes and the worst wake-up's cause. brief (the
    end of `run --attribute`): the top causes on one line, and the trace's tail only
    pointed to; else (`rtgauge show`) the causes' table, the periodicity, the
    interrupts on the measured CPUs and the tail itself."""
    for _, name, a in attributions(runs):
        if a.get("unavailable"):
            console.print(f"Why it spiked ({escape(name)}): not traced: {escape(str(a['unavailable']))}")
            continue
        console.print(f"[bold]Why it spiked[/] ({escape(name)}): {escape(headline(a))}")
        causes = top_causes(a)
        if brief and causes:
            console.print(f"  top causes: {escape('; '.join(causes))}")
        if a.get("spikes"):
            console.print(f"  rate: {escape(rate_text(a))}" + ("" if brief else f"; {escape(periodic_text(a))}"))
        if a.get("lost_events"):
            console.print(f"  [yellow]the trace lost {a['lost_events']:,} events: some windows are incomplete[/]")
        if not brief and a.get("sources"):
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
            console.print(f"  worst wake-up: {w['latency_us']:,.1f} µs on CPU {w['cpu']} (cycle {w['cycle']}), "
                          f"cause {escape(w['cause'])}")
        if not brief and a.get("irq_sources"):
            console.print("  interrupts on the measured CPUs: " + escape(", ".join(
                f"{r['source']} ×{r['count']:,} ({r['total_us']:,.1f} µs in all, worst {r['worst_us']:,.1f} µs)"
                for r in a["irq_sources"][:5])))
        console.print(f"  [yellow]{escape(TRACED_NOTE)}[/]")
    if not brief:
        print_threshold_traces(console, runs)
        return
    for _, name, t in threshold_traces(runs):
        if not t.get("unavailable"):        # said once as the run began; there is no tail to show
            console.print(f"Trace (--trace-threshold-us, {escape(name)}): {escape(trace_headline(t))}; "
                          "`rtgauge show` prints its tail")


def render_spikes_html(runs: list) -> str:
    found = attributions(runs)
    tails = render_traces_html(runs)
    if not found:
        return tails
    out = [f"<p class='note'>Every wake-up later than the threshold is attributed to what held its CPU between "
           f"the deadline and the wake-up, from a kernel trace of the whole run (docs/attribution.md). "
           f"{h(COST_NOTE)} The latency figures of a traced job include that cost.</p>"]
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
    return "".join(out) + tails


def render_traces_html(runs: list) -> str:
    """The tails kept by --trace-threshold-us, each folded under its headline."""
    out = []
    for run_id, name, t in threshold_traces(runs):
        out.append(f"<h3>Run {h(str(run_id))}: {h(name)}, the trace kept by --trace-threshold-us</h3>"
                   f"<p>{h(trace_headline(t))}.</p>")
        tail = t.get("tail") or []
        if tail:
            marker = f"; the marker: {h(str(t['marker']))}" if t.get("marker") else ""
            out.append(f"<details><summary>Its last {len(tail):,} lines{marker}</summary>"
                       f"<pre class='wide' tabindex='0'>{h(chr(10).join(map(str, tail)))}</pre></details>")
    return "".join(out)
