"""A latency run's figures per window beyond its maxima: the average and the late
periods of every window, which a single-round comparison cuts into batches for the
noise of the average and of the missed deadlines (noise.batch_means, noise.batch_rates;
docs/compare.md "Single runs").

The engine's result document holds them for the run's windows (the windows of
`ti_window_max`), all threads together, as four series, the window counts
(docs/engine.md, latency's metrics; the values under "max", as `ti_window_max` keeps them):

- `window_cycles`: the wake-ups measured in the window;
- `ti_window_sum` (ns): the sum of their Ti (the window's average is this over its
  wake-ups);
- `window_misses`: the cycles whose slack went negative;
- `window_skipped`: the deadlines due in the window that were skipped after a late
  wake-up.

A document written before the engine kept them has none; its status stream
(`rtgauge-engine latency --status`, docs/samples.md) holds per window and thread the
cycles, the average of Ti, the misses and the skipped deadlines, and fold_status turns
those lines into the same series with `ti_window_avg` (ns, the window's average over
every thread's cycles, rounded as the status rounds it) in place of the sum.

A window's late periods are its misses plus its skipped deadlines and its periods are its
cycles plus its skipped deadlines, as rtgauge counts a run's (analysis.run.rows.late_periods).
A stored measurement with neither (a run stored before the engine kept the window counts,
or another tool's) has no per-window average or miss count; window_figures then says
None and compare says so and falls back."""

from __future__ import annotations

import json
import math

from rtgauge.records import Measurement

AVG, CYCLES, MISSES, SKIPPED = "ti_window_avg", "window_cycles", "window_misses", "window_skipped"
SUM = "ti_window_sum"                         # the engine's: the window's Ti summed, ns
SERIES = (AVG, CYCLES, MISSES, SKIPPED)       # fold_status's


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


def window_figures(m: Measurement) -> dict | None:
    """{"avg", "cycles", "late", "periods", "source"}: per window, in time order, the
    average Ti, the wake-ups, the late periods (misses + skipped) and the periods
    (wake-ups + skipped) of a stored measurement, and which series gave the average
    (SUM, the engine's, else AVG, a folded status); None when it holds neither form
    whole (or its series disagree in length)."""
    counts = [m.series(name) for name in (CYCLES, MISSES, SKIPPED)]
    total, mean = m.series(SUM), m.series(AVG)
    source, avgs = (SUM, total) if total is not None else (AVG, mean)
    got = [avgs, *counts]
    if any(s is None for s in got) or len({len(s) for s in got}) != 1:
        return None
    cycles, misses, skipped = counts
    out = {"avg": [], "cycles": [], "late": [], "periods": [], "source": source}
    for a, c, k, s in zip(avgs, cycles, misses, skipped):
        c, k, s, a = _number(c) or 0.0, _number(k) or 0.0, _number(s) or 0.0, _number(a)
        if source == SUM and a is not None:
            a = a / c if c > 0 else None
        out["avg"].append(a if c > 0 else None)
        out["cycles"].append(c)
        out["late"].append(k + s)
        out["periods"].append(c + s)
    return out
