"""The terminal summary printed at the end of `rtgauge run`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rtgauge.analysis import cross_checks, latency_row, scalar


def _f(v, digits=1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def print_summary(console: Console, run: dict) -> None:
    system = run.get("system") or {}
    console.print(f"[bold]Run {run['id']}[/] ({run.get('profile')}) on {system.get('hostname', '?')}, "
                  f"kernel {system.get('kernel_release', '?')}, preemption {system.get('preempt_model', '?')}: "
                  f"[bold]{run.get('status')}[/]")
    table = Table(title="Wake-up latency (µs)", title_justify="left")
    for col in ("job", "tool", "condition", "samples", "min", "avg", "p99", "p99.99", "max", "misses"):
        table.add_column(col, justify="right" if col not in ("job", "tool", "condition") else "left",
                         no_wrap=True)
    other = []
    for m in run.get("measurements", []):
        row = latency_row(m)
        if row is None:
            other.append(m)
            continue
        flag = " (fallback: not real-time)" if row["fallback"] else ""
        flag += " (interrupted)" if row["interrupted"] else ""
        table.add_row(m["name"].split("/")[0] + flag, row["tool"], row["condition"], f"{row['samples']:,}",
                      _f(row["min_us"]), _f(row["avg_us"]), _f(row["p99_us"]), _f(row["p9999_us"]),
                      f"[bold]{_f(row['max_us'])}[/]", "-" if row["misses"] is None else str(row["misses"]))
    if table.row_count:
        console.print(table)
    for pair in cross_checks(run.get("measurements", [])):
        parts = []
        for k, label in (("avg_us", "avg"), ("p99_us", "p99"), ("max_us", "max")):
            a, b, ratio = pair[k]
            parts.append(f"{label} {_f(a)} vs {_f(b)}" + (f" (×{ratio:.2f})" if ratio else ""))
        console.print(f"  rtgauge vs cyclictest, {pair['name']}: " + "; ".join(parts))
    for m in other:
        if not m.get("ok"):
            console.print(f"[red]{m['name']}: failed: {m.get('error')}[/]")
            continue
        mono, tsc = scalar(m, "timestamp_monotonic"), scalar(m, "timestamp_tsc")
        if mono is not None:
            console.print(f"Timestamp cost: CLOCK_MONOTONIC {_f(mono)} ns"
                          + (f", TSC {_f(tsc)} ns" if tsc is not None else ", TSC unavailable")
                          + " (published bound: < 100 ns)")
    bad = [c for c in run.get("doctor", []) if c.get("status") in ("bad", "warn")]
    if bad:
        console.print(f"Doctor: {sum(c['status'] == 'bad' for c in bad)} bad, "
                      f"{sum(c['status'] == 'warn' for c in bad)} warnings — `rtgauge doctor` says what to change.")
