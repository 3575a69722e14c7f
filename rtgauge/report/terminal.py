"""The terminal summary printed at the end of `rtgauge run` (and by `rtgauge report
--summary`), and the side-by-side tables of `rtgauge compare`. Text from the measured
system is escaped so that it cannot inject console markup."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rtgauge.report.safe import markup as escape
from rtgauge.analysis.run.rows import cross_check_text, cross_checks, latency_measurements, latency_row, system_label
from rtgauge.analysis.studies.micro import micro_rows, rhealstone, verdict_rows
from rtgauge.analysis.run.tire import held_text, period_text
from rtgauge.analysis.studies.published import (STUDIES, beside_text, projection_text, published_verdicts, shown, studies,
                                       systems_of)
from rtgauge.analysis.run.headline import DEFAULT_BUDGET_US, headline
from rtgauge.analysis.run.marks import marks
from rtgauge.analysis.run.starved import starved_hint
from rtgauge.analysis.run.systems import emulation_note
from rtgauge.analysis.studies.conclusions import FAILS, HOLDS, check_conclusions
from rtgauge.records import Run
from rtgauge.report.stalls import print_stalls
from rtgauge.report.numbers import avg_sigma, fmt_group, latency_figures, misses_text, us_group
from rtgauge.report.spikes import print_attribution


def _f(v, digits=1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def print_summary(console: Console, run: Run, budget_us: float = DEFAULT_BUDGET_US, verdict=None) -> None:
    system = run.system
    console.print(f"[bold]Run {run.id}[/] ({escape(str(run.profile))}) on "
                  f"{escape(str(system.get('hostname', '?')))}, kernel {escape(str(system.get('kernel_release', '?')))}, "
                  f"preemption {escape(str(system.get('preempt_model', '?')))}: [bold]{escape(str(run.status))}[/]")
    note = emulation_note(system)
    if note:
        console.print(f"[yellow]{escape(system.get('hostname') or '?')}: {escape(note)}[/]")
    h = headline(run, budget_us)
    if verdict is not None:
        print_verdict(console, verdict)
    print_headline(console, run, h)
    print_latency(console, run)
    latency = latency_measurements(run)
    print_split(console, latency)
    if verdict is None:      # the verdict carries them when there is one
        for m in latency:
            hint = starved_hint(m, run.system)
            if hint:
                console.print(f"[yellow]{escape(hint)}[/]")
    print_micro(console, [run])
    print_stalls(console, [run])
    print_attribution(console, [run], brief=True)
    for m in run.measurements:
        if not m.ok:
            console.print(f"[red]{escape(m.label)}: failed: {escape(str(m.error))}[/]")
            continue
        mono, tsc = m.scalar("timestamp_monotonic"), m.scalar("timestamp_tsc")
        if mono is not None:
            console.print(f"Timestamp cost: CLOCK_MONOTONIC {_f(mono)} ns"
                          + (f", TSC {_f(tsc)} ns" if tsc is not None else ", TSC unavailable")
                          + " (published bound: < 100 ns)")
    bad = [c for c in run.doctor if c.get("status") in ("bad", "warn")]
    if bad:
        console.print(f"Doctor: {sum(c['status'] == 'bad' for c in bad)} bad, "
                      f"{sum(c['status'] == 'warn' for c in bad)} warnings — `rtgauge doctor` says what to change.")


def print_headline(console: Console, run: Run, h: dict) -> None:
    r = h["rating"]
    colour = "green" if (r.stars or 0) >= 4 else ("yellow" if (r.stars or 0) >= 2 else "red")
    if r.flags:
        console.print(f"Rating: [yellow]not rated[/] — the figures alone would read {escape(str(r.unrated_class))}, "
                      "but the evidence cannot carry that claim:")
        for text in r.flags:
            console.print(f"  [yellow]• {escape(text)}[/]")
    else:
        # "not rated — no wake-up latency measured"; a rating reads "★★★☆☆ class"
        head = f"{r.glyphs} — {r.klass}" if r.stars is None else f"{r.glyphs} {r.klass}"
        console.print(f"Rating: [{colour}]{escape(head)}[/]"
                      + (f" — {escape('; '.join(r.reasons))}" if r.reasons else ""))
    if h["worst_idle_us"] is not None or h["worst_loaded_us"] is not None:
        console.print(f"  worst-case wake-up latency: idle {_f(h['worst_idle_us'])} µs, loaded "
                      f"{_f(h['worst_loaded_us'])} µs" + (f" ({escape(h['loaded_condition'])})" if h["loaded_condition"] else ""))
    for t in h["tire"]:
        best = f"{t['max_masses']:,}" if t["max_masses"] else "none"
        console.print(f"  tire at {escape(period_text(t['period_ms']))}, {escape(t['policy'])}, "
                      f"{escape(t['threads_label'])} thread(s), {escape(t['solver'])}: largest n with zero misses "
                      f"{best}" + (f" ({held_text(t)})" if held_text(t) else ""))
    for c in h.get("tire_pretest") or []:
        console.print(f"  tire pretest at {escape(period_text(c['period_ms']))}, {escape(c['policy'])}, "
                      f"{escape(c['solver'])}: {escape(c['text'])}")
    if h["fallback"]:
        console.print(f"[red]  not real-time: {escape(', '.join(h['fallback']))} ran without real-time scheduling[/]")


def print_verdict(console: Console, v) -> None:
    """The verdict against the job's budget (rtgauge/analysis/run/verdict.py) and its evidence."""
    colour = {"yes": "green", "no": "red"}.get(v.answer, "yellow")
    console.print(f"[bold]Can it carry the job?[/] [{colour} bold]{escape(v.headline)}[/]")
    for j in v.jobs:
        console.print(f"  {escape(j.name)} ({escape(j.tool)}, {escape(str(j.condition))}): {escape(j.answer)} — "
                      f"{escape(j.why)}")
    for text in v.reasons:
        if not any(text.startswith(f"{j.name}: ") for j in v.jobs):
            console.print(f"  [yellow]{escape(text)}[/]")
    for text in v.incomplete:
        console.print(f"  [red]incomplete: {escape(text)}; the verdict fails closed (exit status 5)[/]")


def print_latency(console: Console, run: Run) -> None:
    table = Table(title="Wake-up latency (µs)", title_justify="left")
    for col in ("job", "tool", "condition", "samples", "min", "avg ± σ", "p99", "p99.99", "max", "misses"):
        table.add_column(col, justify="right" if col not in ("job", "tool", "condition") else "left", no_wrap=True)
    for m in latency_measurements(run):
        row = latency_row(m)
        flag = "".join(f" ({text})" for text in marks(m))
        flag += f" ({m.stopped_early})" if m.stopped_early else ""
        job = m.label.replace(f"/{m.tool}", "", 1) if m.cross_check else m.label
        table.add_row(escape(job + flag), escape(row["tool"]), escape(str(row["condition"])),
                      f"{row['samples']:,}", latency_figures(row, "-")[0], avg_sigma(row, "-"),
                      *latency_figures(row, "-")[2:4], f"[bold]{latency_figures(row, '-')[4]}[/]",
                      misses_text(row["misses"], row["skipped"], "-"))
    if table.row_count:
        console.print(table)
    for pair in cross_checks(run.measurements):
        figures, what = cross_check_text(pair, "-")
        console.print(f"  rtgauge vs {pair['reference']}{escape(what)}, {escape(pair['name'])}: " + figures)


SPLIT_PARTS = (("ti_irq", "deadline → timer interrupt"), ("ti_sched", "interrupt → thread running"),
               ("ti", "deadline → thread back in user space"))


def print_split(console: Console, measurements) -> None:
    """The wake-up latency split by the kernel's trace events (latency --split,
    docs/engine.md "The split of Ti"): ti_irq and ti_sched beside ti, as the interrupt
    study reports its interrupt latency and context switch, max (avg ± σ), with the
    trace's own counts (each part counts what the trace paired, not the wake-ups)."""
    split = [m for m in measurements if m.metric("ti_irq").count is not None]
    if not split:
        return
    table = Table(title="Wake-up latency split by trace events (µs)", title_justify="left")
    for col in ("job", "part", "from → to", "samples", "min", "avg ± σ", "p99", "max"):
        table.add_column(col, justify="left" if col in ("job", "part", "from → to") else "right", no_wrap=True)
    for m in split:
        for name, what in SPLIT_PARTS:
            mt = m.metric(name)
            if mt.count is None:
                continue
            lo, avg, p99, hi, sd = fmt_group([mt.min, mt.avg, mt.p99, mt.max, mt.stddev], 1000.0, dash="-", max_decimals=1)
            table.add_row(escape(m.label), name, what, f"{mt.count:,}", lo,
                          avg if mt.stddev is None else f"{avg} ± {sd}", p99, hi)
    console.print(table)
    for m in split:
        lost, unmatched = m.scalar("split_lost"), m.scalar("split_unmatched")
        if lost or unmatched:
            console.print(f"[yellow]  {escape(m.label)}: the split is incomplete: {lost or 0:,} trace events lost, "
                          f"{unmatched or 0:,} wake-ups without their timer's expiry[/]")


def published_text(row) -> str:
    """The studies whose figures of the same method are shown in the published tables."""
    titles = {st.source: st.title.split(" (")[0] for st in STUDIES}
    seen: list[str] = []
    for p in row.published:
        if titles.get(p.source, p.source) not in seen:
            seen.append(titles.get(p.source, p.source))
    return "; ".join(seen) or "-"


def _layout(study, text: dict) -> str:
    if study.layout == "max (avg ± σ)":
        return f"{text['max']} ({text['avg']} ± {text['stddev']})"
    return " / ".join(text[s] for s in study.stats)


def _published_cell(study, stats: dict) -> str:
    text = {}
    for stat in study.stats:
        p = stats.get(stat)
        text[stat] = "-" if p is None or p.ns is None else f"{p.bound}{p.ns / 1000:,g}"
    if "value" in stats and not any(s in stats for s in study.stats):   # a single figure (IRQ-S-SUS)
        p = stats["value"]
        return p.text if p.ns is None else f"{p.bound}{p.ns / 1000:,g}"
    return _layout(study, text)


def _measured_cell(study, placed: dict) -> str:
    cell = _placed_cell(study, placed)
    for b in placed.get("beside") or []:       # analogues, set beside and never compared
        st = b.get("stats") or {}
        figure = st.get("value") if st.get("value") is not None else st.get("max")
        if figure is not None:
            label = "max " if st.get("value") is None else b.get("bound", "")
            cell += f"\n[cyan]analogue {escape(b['metric'])}: {label}{figure:,.1f}[/]"
    return cell


def _placed_cell(study, placed: dict) -> str:
    if placed.get("status") == "compared":
        st = placed["stats"]
        cell = _layout(study, dict(zip(study.stats, fmt_group([st.get(k) for k in study.stats], dash="-"))))
        if placed.get("comparable") is False:
            return cell + " [yellow](not comparable: settings)[/]"
        return cell + (" [yellow](max: fewer samples)[/]" if placed.get("max_comparable") is False else "")
    if placed.get("status") == "different method":
        return "[dim]" + escape(str(placed.get("note") or "different method")).split(":")[0] + "[/]"
    return "[dim]not measured[/]"


def print_conclusions(console: Console, runs: list[Run]) -> None:
    """The reproduced studies' conclusions checked on runs, one line each: holds, does
    not hold, or not decidable with the reason and what would decide it."""
    found = studies(runs)
    if not found:
        return
    checks = check_conclusions(runs, {study.source for study, _ in found})
    if not checks:
        return
    titles = {st.source: st.title.split(" (")[0] for st in STUDIES}
    console.print("The studies' conclusions, checked on these runs:")
    for c in checks:
        colour = "green" if c.status == HOLDS else ("red" if c.status == FAILS else "dim")
        console.print(f"  [{colour}]{escape(c.status)}[/] [dim]{escape(titles.get(c.conclusion.source, ''))}, "
                      f"{escape(c.conclusion.key)}:[/] {escape(c.line().split(': ', 1)[1])}")


def print_published(console: Console, runs: list[Run]) -> None:
    """Each published study's rows beside the runs' measurements of the same method
    (rtgauge/analysis/studies/published.py), then the published behaviour verdicts."""
    for study, rows in studies(runs):
        systems = systems_of(rows)
        measured = [row for row in rows if any(shown(row.placed.get(r.id, {}))
                                               for r in runs)]
        left_out = len(rows) - len(measured)
        rows = measured
        table = Table(title=f"{study.title}: {study.layout} µs; published, then measured", title_justify="left")
        table.add_column("test")
        table.add_column("condition")
        for sname in systems:
            table.add_column(escape(sname), justify="right", style="dim")
        for r in runs:
            table.add_column(escape(system_label(r)), justify="right")
        notes = []
        for row in rows:
            cond = row.condition + (f" -> {row.our_condition}" if row.our_condition not in (None, row.condition) else "")
            pub = [_published_cell(study, row.published[s]) if s in row.published else "-" for s in systems]
            mine = []
            for r in runs:
                placed = row.placed.get(r.id, {})
                mine.append(_measured_cell(study, placed))
                for b in placed.get("beside") or []:
                    note = f"analogue: {system_label(r)}, {b['measurement']}: {beside_text(b)}"
                    if note not in notes:
                        notes.append(note)
                if placed.get("status") == "different method" and placed.get("note") not in notes:
                    notes.append(placed.get("note"))
                if placed.get("comparable") is False:
                    note = f"settings: {system_label(r)}, {placed['measurement']}: {placed['settings_note']}"
                    if note not in notes:
                        notes.append(note)
                elif placed.get("max_comparable") is False:
                    note = (f"fewer samples: a measured max of fewer than {placed['published_samples']:,} samples "
                            "is not comparable with the published maxima (run the full profile)")
                    if note not in notes:
                        notes.append(note)
                    if placed.get("projected"):
                        note = (f"fewer samples: {system_label(r)}, {placed['measurement']}: "
                                f"{projection_text(placed['projected'])}")
                        if note not in notes:
                            notes.append(note)
            table.add_row(escape(row.test), escape(cond), *pub, *mine)
        console.print(table)
        if left_out:
            notes.append(f"fewer rows: {left_out} published row{'s' if left_out != 1 else ''} that these runs did "
                         "not measure left out (every row: `rtgauge show --json`, under \"published\")")
        for n in notes:
            console.print(f"  [dim]{escape(str(n))}{'' if n.startswith(('fewer samples', 'fewer rows', 'settings')) else '; not compared'}[/]")
    print_conclusions(console, runs)
    vrows = published_verdicts(runs)
    if vrows:
        table = Table(title="Behaviour verdicts beside the published ones", title_justify="left")
        table.add_column("test")
        table.add_column("verdict")
        table.add_column("published")
        for r in runs:
            table.add_column(escape(system_label(r)))
        for v in vrows:
            cells = []
            for r in runs:
                c = v["cells"].get(r.id)
                cells.append("-" if c is None else ("[green]pass[/]" if c["pass"] else "[red]FAIL[/]")
                             + ("" if c["agrees"] else " [bold red](disagrees)[/]"))
            table.add_row(escape(v["test"]), escape(v["verdict"]),
                          escape(("pass: " if v["published_pass"] else "FAIL: ") + v["published"]), *cells)
        console.print(table)


def print_micro(console: Console, runs: list[Run]) -> None:
    rows = micro_rows(runs)
    if rows:
        table = Table(title="Microbenchmarks (µs): avg / max, published figures beside", title_justify="left")
        table.add_column("test", no_wrap=True)
        table.add_column("condition")
        for r in runs:
            table.add_column(escape(system_label(r) if len(runs) > 1 else "avg / max"), justify="right", no_wrap=True)
        table.add_column("published figures in")   # the study whose table sets them beside
        for row in rows:
            cells = []
            for r in runs:
                c = row.cells.get(r.id)
                if not c:
                    cells.append("-")
                    continue
                avg, mx = us_group([c["avg"], c["max"]], dash="-")
                cells.append(f"{avg} / [bold]{mx}[/]")
            table.add_row(escape(row.label), escape(row.condition), *cells, escape(published_text(row)))
        console.print(table)
    for run in runs:
        for line in rhealstone(run):
            console.print(f"Rhealstone ({escape(system_label(run))}) {escape(line)}")
    vrows = verdict_rows(runs)
    if vrows:
        table = Table(title="Behaviour verdicts", title_justify="left")
        table.add_column("test")
        table.add_column("verdict")
        for r in runs:
            table.add_column(escape(system_label(r)) if len(runs) > 1 else "result")
        for v in vrows:
            cells = []
            for r in runs:
                c = v["cells"].get(r.id)
                cells.append("-" if c is None else ("[green]pass[/]" if c["pass"] else "[red]FAIL[/]")
                             + (f" {escape(c['detail'])}" if c and len(runs) == 1 else ""))
            label = v["test"] + (f" [{v['variant']}]" if v["variant"] else "")
            table.add_row(escape(label), escape(v["verdict"]), *cells)
        console.print(table)
