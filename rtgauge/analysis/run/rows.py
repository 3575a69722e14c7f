"""The rows of a run's latency figures, decided once: which distribution a latency row
reads (row_metric), the row itself (latency_row: µs, a percentile only where the sample
count supports it), the periods not served on time (late_periods), which measurements
are latency jobs, and the pairing of each engine job with its cross-checks
(cross_checks). Everything else in rtgauge/analysis reads them from here."""

from __future__ import annotations

from rtgauge.records import Measurement, Run, bounded_count as _count
from rtgauge.catalogue import LATENCY, catalogue

US = 1000.0


# A percentile q is printed only when at least TAIL_SAMPLES samples lie beyond it
# (n × (1 − q) ≥ 10): p99 needs 1,000 samples, p99.99 100,000. With fewer, the figure is
# one of the few largest samples, not an estimate of the percentile (docs/report.md).
TAIL_SAMPLES = 10


def percentile_supported(count: int | None, q: float) -> bool:
    return bool(count) and count * (1 - q) >= TAIL_SAMPLES - 1e-9


# The distribution a latency row reads, decided here once: the wake-up `ti` (the engine,
# cyclictest, stress-ng's cyclic); rtla timerlat stores its columns under their own
# names (rtgauge/tools/rtla.py), and its row is its user-space thread where rtla ran one
# (-u), else its kernel thread: the timer's expiry to timerlat's thread running.
ROW_METRICS = ("ti", "timerlat_user", "timerlat_thread")
ROW_METRIC_TEXT = {"ti": "wake-up latency ti", "timerlat_user": "rtla timerlat's user-space thread",
                   "timerlat_thread": "rtla timerlat's kernel thread"}


def row_metric(m: Measurement) -> str:
    """The name of the distribution m's latency row reads ("ti" when it holds none)."""
    for name in ROW_METRICS:
        if m.metric(name).count:
            return name
    return "ti"


def latency_row(m: Measurement) -> dict | None:
    """Summary figures (µs) of a periodic measurement (its row metric: `ti`, rtla's
    thread), or None when it has none. A percentile the sample count does not support
    (percentile_supported) is None."""
    metric = row_metric(m)
    ti = m.metric(metric)
    if not ti.is_distribution or not ti.count:
        return None
    return {
        "name": m.label, "tool": m.tool, "condition": m.condition, "metric": metric,
        "samples": ti.count, "min_us": _in_us(ti.min), "avg_us": _in_us(ti.avg), "stddev_us": _in_us(ti.stddev),
        "p99_us": _in_us(ti.p99) if percentile_supported(ti.count, 0.99) else None,
        "p9999_us": _in_us(ti.p9999) if percentile_supported(ti.count, 0.9999) else None, "max_us": _in_us(ti.max),
        **late_periods(m), "policy": m.policy, "fallback": m.fallback,
        "interrupted": m.interrupted,
    }


def late_periods(m: Measurement) -> dict:
    """The periods of a periodic measurement and those not served on time, decided once
    for every figure that counts misses (docs/verdict.md): a deadline the engine skipped
    after a late wake-up (`skipped`: no wake-up happened for it) is a period not served
    on time, as a cycle whose slack went negative (`misses`) is.
    {"misses": missed wake-ups + skipped (None when the measurement counts neither),
     "missed_wakeups", "skipped", "wakeups" (cycles measured), "periods" (wakeups + skipped)}."""
    missed, skipped = _count(m.scalar("misses")), _count(m.scalar("skipped"))
    wakeups = _count(m.scalar("cycles"))
    if wakeups is None:
        wakeups = _count(m.metric(row_metric(m)).count)
    late = None if missed is None and skipped is None else (missed or 0) + (skipped or 0)
    return {"misses": late, "missed_wakeups": missed, "skipped": skipped, "wakeups": wakeups,
            "periods": None if wakeups is None else wakeups + (skipped or 0)}


def is_latency_measurement(m: Measurement) -> bool:
    """A wake-up latency job (ours or a cross-check: every cross-check measures wake-up
    latency, whichever tool ran it), not a tire or microbenchmark run that also happens to
    record Ti."""
    return m.test == "" or m.cross_check or catalogue().kind_of(m.test) == LATENCY


def latency_measurements(run: Run) -> list[Measurement]:
    return [m for m in run.measurements if is_latency_measurement(m) and latency_row(m)]


def _in_us(ns):
    return None if ns is None else ns / US


def cross_checks(measurements, tools=None) -> list[dict]:
    """Pair each engine latency measurement with the cross-check of each of `tools` (None:
    every tool whose measurements are stored as cross-checks, by name) of the same job,
    condition, round and segment (the plan names it JOB/TOOL): the ratio engine/tool of
    avg, p99 and max (rtla: its row metric, row_metric: timerlat's kernel thread,
    `timerlat_thread`, a timer-woken thread as the engine's is, but in the kernel). Which
    tools are cross-checks is the plan's (the tool adapters); each stored measurement says
    it (`reference`), so it is read here, not listed."""
    ms = [m for m in measurements if is_latency_measurement(m)]
    if tools is None:
        tools = sorted({m.tool for m in ms if m.cross_check and m.tool})
    rows = {m.key: latency_row(m) for m in ms}
    out = []
    for m in ms:
        for tool in tools:
            row, ref = rows[m.key], rows.get((f"{m.name}/{tool}", m.round, m.segment))
            if row is None or ref is None or row["tool"] != "engine":
                continue
            pair = {"name": m.label, "condition": row["condition"], "reference": tool,
                    "reference_metric": ref["metric"]}
            for k in ("avg_us", "p99_us", "max_us"):
                a, b = row[k], ref[k]
                pair[k] = (a, b, (a / b) if a is not None and b else None)
            out.append(pair)
    return out


def cross_check_text(pair: dict, dash: str, unit: str = "") -> tuple[str, str]:
    """A pair of cross_checks as text: its figures, 'avg A vs B UNIT (×R); p99 ...; max
    ...' (µs, one decimal, DASH for a missing one, no ratio where there is none), and
    what the reference measured, ' (TEXT, metric)', where that is not the wake-up
    latency ti (else '')."""
    def fixed(v) -> str:
        return dash if v is None else f"{v:,.1f}"
    parts = []
    for k, label in (("avg_us", "avg"), ("p99_us", "p99"), ("max_us", "max")):
        a, b, ratio = pair[k]
        parts.append(f"{label} {fixed(a)} vs {fixed(b)}{unit}" + (f" (×{ratio:.2f})" if ratio else ""))
    theirs = pair.get("reference_metric", "ti")
    return "; ".join(parts), (f" ({ROW_METRIC_TEXT[theirs]}, {theirs})" if theirs != "ti" else "")


def scalar(m: Measurement, name: str):
    return m.scalar(name)


def system_label(run: Run) -> str:
    """A short name for a run's system in column headers: host, kernel, run id."""
    return run.label
