"""A latency run's figures per window beyond its maxima: the average and the late
periods of every window, which a single-round comparison cuts into batches for the
noise of the average and of the missed deadlines (noise.batch_means, noise.batch_rates;
docs/compare.md "Single runs").

The engine's result document holds only the maximum of every window (`ti_window_max`).
Its status stream (`rtgauge-engine latency --status`, docs/samples.md) holds per
window and thread the cycles, the average of Ti, the misses and the skipped deadlines.
fold_status turns those lines into four series of the result document's contract (the
values under "max", as `ti_window_max` keeps them):

- `ti_window_avg` (ns): the average Ti of the window over every thread's cycles;
- `window_cycles`: the wake-ups measured in the window (all threads);
- `window_misses`: the cycles whose slack went negative;
- `window_skipped`: the deadlines due in the window that were skipped after a late
  wake-up.

A window's late periods are its misses plus its skipped deadlines and its periods are its
cycles plus its skipped deadlines, as rtgauge counts a run's (analysis.run.rows.late_periods).
A stored measurement without these series (every run that `rtgauge run` stores today:
the status is read for the live view and not kept) has no per-window average or miss
count; window_figures then says None and compare says so and falls back."""

from __future__ import annotations

import json
import math

from rtgauge.records import Measurement, Metric

AVG, CYCLES, MISSES, SKIPPED = "ti_window_avg", "window_cycles", "window_misses", "window_skipped"
SERIES = (AVG, CYCLES, MISSES, SKIPPED)


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def fold_status(lines) -> dict[str, dict]:
    """The per-window series of a latency run from its status lines (JSON text, one a
    window, in any order). A window without a line, or a thread's entry without cycles,
    adds nothing; a window whose threads measured no cycle has no average (null)."""
    rows: dict[int, dict] = {}
    window_s = None
    start = None
    for text in lines:
        text = text.strip()
        if not text:
            continue
        line = json.loads(text)
        w = int(line["window"])
        window_s = line.get("window_s", window_s)
        if w == 0 or start is None:
            start = int(line["start_ns"]) - w * round(float(line["window_s"]) * 1e9)
        total = rows.setdefault(w, {"sum": 0.0, "cycles": 0, "misses": 0, "skipped": 0})
        for t in line.get("threads") or []:
            c = int(t.get("cycles") or 0)
            avg = _number(t.get("avg"))
            if c and avg is not None:
                total["sum"] += avg * c
                total["cycles"] += c
            total["misses"] += int(t.get("misses") or 0)
            total["skipped"] += int(t.get("skipped") or 0)
    if not rows:
        return {}
    n = max(rows) + 1
    empty = {"sum": 0.0, "cycles": 0, "misses": 0, "skipped": 0}
    per = [rows.get(w, empty) for w in range(n)]
    head = {"window_ns": round(float(window_s) * 1e9), "start_ns": start}
    return {
        AVG: {"unit": "ns", **head, "max": [round(r["sum"] / r["cycles"], 3) if r["cycles"] else None for r in per]},
        CYCLES: {"unit": "count", **head, "max": [r["cycles"] for r in per]},
        MISSES: {"unit": "count", **head, "max": [r["misses"] for r in per]},
        SKIPPED: {"unit": "count", **head, "max": [r["skipped"] for r in per]},
    }


def _series(m: Measurement, name: str) -> list | None:
    metric = m.metrics.get(name)
    return metric.series if isinstance(metric, Metric) and isinstance(metric.series, list) else None


def window_figures(m: Measurement) -> dict | None:
    """{"avg", "cycles", "late", "periods"}: per window, in time order, the average Ti,
    the wake-ups, the late periods (misses + skipped) and the periods (wake-ups +
    skipped) of a stored measurement; None when it does not hold the four series (or
    they disagree in length)."""
    got = [_series(m, name) for name in SERIES]
    if any(s is None for s in got) or len({len(s) for s in got}) != 1:
        return None
    avg, cycles, misses, skipped = got
    out = {"avg": [], "cycles": [], "late": [], "periods": []}
    for a, c, k, s in zip(avg, cycles, misses, skipped):
        c, k, s = _number(c) or 0.0, _number(k) or 0.0, _number(s) or 0.0
        out["avg"].append(_number(a) if c > 0 else None)
        out["cycles"].append(c)
        out["late"].append(k + s)
        out["periods"].append(c + s)
    return out
