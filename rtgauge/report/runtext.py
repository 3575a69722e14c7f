"""A stored run as `rtgauge show` prints it, and the list of runs: tables drawn for a
terminal or TSV into a pipe or a file (fmt: --format, else chosen by the output; no
module-wide setting), the run's system, measurements, probable worst case, tire pretest
and tire cost. Below the command line, so the import reads a run through the same
printing before it stores it (cli/importing.py dry_read)."""

from __future__ import annotations

import statistics
from datetime import datetime

from rich.table import Table

from rtgauge.analysis.run.marks import marks
from rtgauge.analysis.run.rows import is_latency_measurement, late_periods, latency_row, row_metric
from rtgauge.analysis.run.tire import (headline_limits, period_text, pretest_threads, pretest_threads_sentence,
                                       published_hard_limits, published_limit_kind, published_limit_threads,
                                       realfast_curves, same_period, thread_label, tire_points)
from rtgauge.analysis.studies.micro import micro_scalars
from rtgauge.analysis.studies.tirecost import run_cost_model
from rtgauge.records import Measurement, Run
from rtgauge.report.document import pwcet_results
from rtgauge.report.numbers import misses_text
from rtgauge.report import safe
from rtgauge.report.safe import markup as escape, printable
from rtgauge.report.spikes import print_attribution
from rtgauge.report.stalls import print_stalls
from rtgauge.report.terminal import print_conclusions, print_micro, print_split

PERIODIC_STATS = ("min", "avg", "p99", "max")


def console(fmt: str | None = None):
    """Tables drawn on a terminal, TSV into a pipe or file, unless FMT (--format) says."""
    return safe.table_console(fmt)   # looked up on the module: tests replace it


def when(iso: str | None) -> str:
    """A stored UTC timestamp as local time, to the second."""
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


def elapsed(start: str | None, end: str | None) -> str:
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return ""
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


STATUS_STYLE = {"complete": "green", "running": "yellow", "interrupted": "yellow", "failed": "red",
                "abandoned": "red"}


def styled_status(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{escape(status)}[/]"


def print_run_list(runs: list[dict], where: str, fmt: str | None = None) -> None:
    table = Table(title=f"Runs in {where}", title_justify="left")
    for column in ("run", "started", "status", "profile", "host", "kernel"):
        table.add_column(column)
    table.add_column("measurements", justify="right")
    for run in runs:
        table.add_row(str(run["id"]), when(run["started_at"]), styled_status(run["status"]),
                      escape(run["profile"]), escape(run["hostname"]), escape(run["kernel_release"]),
                      str(run["measurements"]))
    console(fmt).print(table)


def system_line(system: dict) -> str:
    parts = [system.get("hostname") or "?"]
    kernel = " ".join(str(system[k]) for k in ("kernel_release", "arch") if system.get(k))
    if kernel:
        parts.append(kernel)
    if system.get("preempt_model"):
        parts.append(f"preempt {system['preempt_model']}")
    cpu = system.get("cpu_model") or ""
    if system.get("cpus"):
        cpu = f"{system['cpus']} × {cpu}" if cpu else f"{system['cpus']} CPUs"
    if cpu:
        parts.append(cpu)
    return " · ".join(parts)


def microseconds(ns) -> str:
    return "-" if not isinstance(ns, (int, float)) else f"{ns / 1000:.1f}"


def scalar(m: Measurement, name: str) -> str:
    value = m.scalar(name)
    return "-" if value is None else str(value)


def misses_cell(m: Measurement) -> str:
    """Periods not served on time: late cycles and skipped deadlines (analysis.run.rows.late_periods)."""
    late = late_periods(m)
    return misses_text(late["misses"], late["skipped"], "-")


def condition_cell(m: Measurement) -> str:
    """The condition with the measurement's marks (fallback, not idle: analysis/run/marks.py)."""
    return " ".join([str(m.condition), *(f"({text})" for text in marks(m))])


def outcome(m: Measurement) -> str:
    if not m.ok:
        return "[red]failed[/]"
    why = m.stopped_early
    return f"[yellow]{why}[/]" if why else "[green]ok[/]"


def verdict_summary(verdicts: dict) -> str:
    return ", ".join(f"{escape(name)} {'[green]pass[/]' if v.passed else '[red]FAIL[/]'}"
                     for name, v in verdicts.items())


def steal_text(m: Measurement) -> str:
    """The hypervisor's steal time on the measured CPUs during the measurement."""
    steal = (m.env.get("counters") or {}).get("steal")
    if not isinstance(steal, dict) or not isinstance(steal.get("total_ms"), (int, float)):
        return "-"
    share = steal.get("max_share")
    text = f"{steal['total_ms']:g}"
    if isinstance(share, (int, float)) and share > 0:
        text += f" ({share:.1%})"
    return f"[yellow]{text}[/]" if steal["total_ms"] > 0 else text


def origin_text(origin: dict) -> str:
    """Where an imported run came from: the format, the file and its identity."""
    text = f"imported from {origin.get('format') or '?'} {origin.get('file') or '?'}"
    if origin.get("run") is not None:
        text += f" (run {origin['run']} of {origin.get('host') or '?'})"
    first = origin.get("first") if isinstance(origin.get("first"), dict) else None
    if first:
        text += f", first imported from {first.get('format') or '?'} {first.get('file') or '?'}"
    return text + f"; identity {origin.get('identity')}"


def print_run(run: Run, fmt: str | None = None) -> None:
    out = console(fmt)
    duration = elapsed(run.started_at, run.finished_at)
    out.print(f"[bold]Run {run.id}[/] · {styled_status(run.status)} · profile {escape(run.profile)} · "
              f"started {when(run.started_at)}" + (f" · took {duration}" if duration else ""))
    if run.note:
        out.print(f"  note: {printable(run.note)}", markup=False)
    if isinstance(run.origin, dict):
        out.print(f"  origin: {printable(origin_text(run.origin))}", markup=False)
    out.print(f"System: {system_line(run.system or {'hostname': run.extra.get('hostname')})}", markup=False)
    warnings = [d for d in run.doctor if d.get("status") != "ok"]
    if warnings:
        out.print("Doctor:")
        for d in warnings:
            advice = f" — {d['advice']}" if d.get("advice") else ""
            out.print(f"  {d.get('status', '?')}: {d.get('name', '?')} = {d.get('value', '')}{advice}",
                      markup=False)
    if not run.measurements:
        out.print("No measurements were stored in this run.")
        return
    # wake-up latency jobs (ours, and the tools' cross-checks) in the latency table; the
    # rest (microbenchmarks, behaviour tests, tire runs) in their own, without empty
    # latency columns; a sweep's probes (hundreds in a full study) counted, not listed
    probes = [m for m in run.measurements if m.is_sweep_probe]
    latency = [m for m in run.measurements if not m.is_sweep_probe
               and (is_latency_measurement(m) or latency_row(m) is not None)]
    others = [m for m in run.measurements if not m.is_sweep_probe and m not in latency]
    if latency:
        table = Table(title="Measurements (wake-up latency ti in µs)", title_justify="left")
        for column in ("name", "tool", "condition", "result"):
            table.add_column(column)
        for stat in PERIODIC_STATS:
            table.add_column(f"ti {stat}", justify="right")
        table.add_column("misses", justify="right")
        table.add_column("steal ms", justify="right")
        table.add_column("verdicts")
        for m in latency:
            metric = row_metric(m)     # rtla's columns are not ti: the tool cell names the one shown
            ti = m.metric(metric)
            tool = (f"{m.tool} (x-check)" if m.cross_check else m.tool) + (f", {metric}" if metric != "ti" else "")
            table.add_row(escape(m.label), escape(tool), escape(condition_cell(m)), outcome(m),
                          *(microseconds(getattr(ti, stat)) for stat in PERIODIC_STATS),
                          misses_cell(m), steal_text(m), verdict_summary(m.verdicts))
        out.print(table)
        print_split(out, latency)
    if others:
        table = Table(title="Other measurements", title_justify="left")
        for column in ("name", "tool", "condition", "result", "steal ms", "verdicts"):
            table.add_column(column, justify="right" if column == "steal ms" else "left")
        for m in others:
            table.add_row(escape(m.label), escape(m.tool), escape(condition_cell(m)), outcome(m), steal_text(m),
                          verdict_summary(m.verdicts))
        out.print(table)
    if probes:
        modes: dict[str, int] = {}
        for m in probes:
            mode = m.name.split("/")[1]
            modes[mode] = modes.get(mode, 0) + 1
        failed = sum(not m.ok for m in probes)
        out.print(f"Sweep probes: {len(probes):,} stored (" + ", ".join(f"{k} {v:,}" for k, v in sorted(modes.items()))
                  + ")" + (f", {failed:,} failed" if failed else "")
                  + "; the limits and curves below, each probe in `rtgauge report` and `show --json`", markup=False)
    print_stalls(out, [run])
    print_attribution(out, [run])
    for m in run.measurements:
        if m.error:
            out.print(f"{printable(m.label, 200)}: {printable(m.error)}", markup=False)
    print_conclusions(out, [run])


def print_pwcet(run: Run, fmt: str | None = None) -> None:
    results = pwcet_results(run)
    if not results:
        return
    out = console(fmt)
    out.print("Probable worst case (extreme value theory, docs/pwcet.md; `rtgauge pwcet` gives each thread):")
    for m, rs in results:
        for r in rs:
            out.print(f"  {m.label}: {r.summary()}", markup=False)


def print_micro_figures(run: Run, fmt: str | None = None) -> None:
    """The microbenchmarks (avg / max beside the published figures), the behaviour
    verdicts and the other figures they measured (a sweep's shortest period, counts), each
    with the unit it was stored in."""
    out = console(fmt)
    print_micro(out, [run])
    scalars = micro_scalars(run)
    if not scalars:
        return
    table = Table(title="Other figures of the microbenchmarks", title_justify="left")
    table.add_column("measurement")
    table.add_column("figure")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("unit")
    for label, name, value, unit in scalars:
        if unit == "ns" and isinstance(value, (int, float)) and not isinstance(value, bool):
            value, unit = value / 1000.0, "µs"     # the unit of every other time shown here
            text = f"{value:,.1f}" if abs(value) >= 1 else f"{value:.3g}"
        elif isinstance(value, int) and not isinstance(value, bool):
            text = f"{value:,}"
        else:
            text = f"{value:,.4g}" if isinstance(value, float) else str(value)
        table.add_row(escape(label), escape(name), escape(text), escape(unit))
    out.print(table)


def print_tire_limits(run: Run, fmt: str | None = None) -> None:
    """The tire sweep's hard real-time limits per period, policy and thread count (held
    up to / lost at, apart; the bisection's where the sweep stored one), the published
    limits beside those at 10 ms; then the real-fast wall times."""
    limits = headline_limits(run)
    out = console(fmt)
    for period in sorted({lim["period_ms"] for lim in limits}, key=lambda p: (not same_period(p, 10.0), p)):
        rows = [lim for lim in limits if lim["period_ms"] == period]
        refs = published_hard_limits() if same_period(period, 10.0) else []
        again = any(lim.get("held_above_lost") for lim in rows)
        table = Table(title=f"Tire model: hard real-time limits at {period_text(period)}, in masses",
                      title_justify="left")
        table.add_column("system: policy, solver")
        table.add_column("threads")
        table.add_column("held up to", justify="right", no_wrap=True)
        table.add_column("lost at", justify="right", no_wrap=True)
        if again:
            table.add_column("held again above", justify="right")
        for lim in rows:
            table.add_row(escape(f"this run: {lim['policy']}, {lim['solver']}"),
                          escape(thread_label(lim["threads"], run.system)),
                          f"{lim['max_masses']:,}" if lim["max_masses"] else "none",
                          f"{lim['lost_at']:,}" if lim.get("lost_at") else "not lost",
                          *([", ".join(f"{n:,}" for n in lim.get("held_above_lost") or []) or "-"] if again else []))
        for ref in refs:
            value = f"{float(ref.value):,.0f}"
            held = published_limit_kind(ref) == "held up to"
            table.add_row(escape(f"published: {ref.system}"), escape(published_limit_threads(ref)),
                          value if held else "-", "-" if held else value, *(["-"] if again else []))
        out.print(table)
        if refs:
            machines = sorted({ref.platform for ref in refs})
            out.print(f"  published on {', '.join(machines)}: the study gives the real-time system's limits as "
                      "sizes held, the general-purpose one's as sizes where hard real time was lost", markup=False)
    for (solver, policy), curves in sorted(realfast_curves(tire_points(run)).items()):
        threads = sorted(curves)
        sizes = sorted({n for pts in curves.values() for n, _ in pts})
        table = Table(title=escape(f"Tire model: real-fast wall time (s), {policy}, {solver}"), title_justify="left")
        table.add_column("masses", justify="right")
        for t in threads:
            table.add_column(f"{t} thr", justify="right", no_wrap=True)
        for n in sizes:
            cells = []
            for t in threads:
                wall = dict(curves[t]).get(n)
                cells.append("-" if wall is None else f"{wall:,.3g}")
            table.add_row(f"{n:,}", *cells)
        out.print(table)


def print_tire_pretest(run: Run, fmt: str | None = None) -> None:
    """The pretest's thread findings (first miss, thread ceiling) beside the study's."""
    for c in pretest_threads(run):
        console(fmt).print(f"Tire pretest at {period_text(c['period_ms'])}, {c['policy']}, {c['solver']}: "
                        f"{pretest_threads_sentence(c)}", markup=False)


def print_tire_cost(run: Run, fmt: str | None = None) -> None:
    """The tire cost equation of the run: constants measured by the solver, and
    each configuration's step time predicted from the others' (docs/tire.md)."""
    model = run_cost_model(run)
    if not model:
        return
    out = console(fmt)
    for policy, m in model.items():
        c = m["constants"]
        tsw = m["tswitch_ns"]
        micro = m["tswitch_micro_ns"]
        out.print(f"Tire cost equation ({policy}): Tspring {c['Tspring']['median']:.2f} ns, "
                  f"Tmass {c['Tmass']['median']:.2f} ns, Tipc {c['Tipc']['median']:.2f} ns, "
                  f"Tswitch {'–' if tsw is None else f'{tsw / 1e3:.1f} µs'} in the runs"
                  + (f" ({micro / 1e3:.2f} µs switch microbenchmark)" if micro is not None else "")
                  + f"; median prediction error {m['median_error']:.0%}", markup=False)
        rows = m["predictions"]
        if len(rows) > PREDICTIONS_LISTED:
            print_cost_errors(out, policy, rows)
            continue
        table = Table(title=escape(f"Ts predicted against measured ({policy})"), title_justify="left")
        for col in ("masses", "threads", "Nswitch (unplanned)", "Nwait", "measured µs", "predicted µs", "error"):
            table.add_column(col, justify="right")
        for r in rows:
            table.add_row(f"{r['masses']:,}", str(r["threads"]), f"{r['nswitch']:.2f}", f"{r.get('nwait', 0):.2f}",
                          f"{r['measured_ns'] / 1e3:.1f}", f"{r['predicted_ns'] / 1e3:.1f}", f"{r['error']:.0%}")
        out.print(table)


# A study's sweep predicts hundreds of probes (449 in the full tire study): beyond this
# many, the terminal gives each thread count's errors in one row, and the report and
# `show --json` keep every probe's prediction.
PREDICTIONS_LISTED = 30


def print_cost_errors(out, policy: str, rows: list[dict]) -> None:
    """The cost equation's prediction errors, one row a thread count: how many probes,
    their sizes, the median and the largest error."""
    table = Table(title=escape(f"Ts predicted against measured ({policy}): {len(rows):,} probes, each in "
                               "`rtgauge report` and `show --json`"), title_justify="left")
    for col in ("threads", "probes", "masses", "median error", "largest error"):
        table.add_column(col, justify="right")
    by_threads: dict[int, list[dict]] = {}
    for r in rows:
        by_threads.setdefault(r["threads"], []).append(r)
    for t, group in sorted(by_threads.items()):
        errs = sorted(r["error"] for r in group)
        sizes = [r["masses"] for r in group]
        table.add_row(str(t), f"{len(errs):,}", f"{min(sizes):,}–{max(sizes):,}",
                      f"{statistics.median(errs):.0%}", f"{errs[-1]:.0%}")
    out.print(table)
