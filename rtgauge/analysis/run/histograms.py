"""Histograms of different tools on one grid. The engine writes log-linear bins
(fine: ~1 % wide), cyclictest 1 µs bins; counting each native bin into the plot
bucket of its midpoint makes combs where native bins are wider than plot buckets,
so each bin's count is spread over the plot buckets it overlaps, in proportion to
the overlap (in linear time, i.e. assuming values uniform inside a native bin)."""

from __future__ import annotations

import math

from rtgauge.analysis.run.rows import row_metric
from rtgauge.records import Measurement, Metric

PLOT_BUCKETS_PER_DECADE = 40
# cyclictest reports whole microseconds: its bin [5000, 5999] holds values in [5, 6) µs.


def rebin_log(bins: list, per_decade: int = PLOT_BUCKETS_PER_DECADE) -> dict[int, float]:
    """Counts per plot bucket k, which covers [10^(k/per_decade), 10^((k+1)/per_decade)) µs."""
    out: dict[int, float] = {}
    for lo, hi, c in bins:
        if not c:
            continue
        lo_us = max(lo / 1000.0, 1e-3)
        hi_us = max((hi + 1) / 1000.0, lo_us * (1 + 1e-9))
        k0 = math.floor(math.log10(lo_us) * per_decade)
        k1 = math.floor(math.log10(hi_us) * per_decade - 1e-9)
        if k0 >= k1:
            out[k0] = out.get(k0, 0.0) + c
            continue
        span = hi_us - lo_us
        for k in range(k0, k1 + 1):
            a = max(lo_us, 10 ** (k / per_decade))
            b = min(hi_us, 10 ** ((k + 1) / per_decade))
            if b > a:
                out[k] = out.get(k, 0.0) + c * (b - a) / span
    return out


def step_points(counts: dict[int, float], per_decade: int = PLOT_BUCKETS_PER_DECADE) -> list[tuple[float, float]]:
    """(lower edge µs, count) for every plot bucket from the first to the last, empty ones at 0."""
    if not counts:
        return []
    return [(10 ** (k / per_decade), counts.get(k, 0.0)) for k in range(min(counts), max(counts) + 1)]


def thread_distributions(m: Measurement, metric: str | None = None) -> list[tuple[str, Metric]]:
    """(label, distribution) per measuring thread ("CPU n" when the env says where it
    ran), or the whole-run distribution when there is no per-thread one; of `metric`,
    else of the measurement's latency row metric (analysis.run.rows.row_metric: ti, rtla's thread)."""
    if metric is None:
        metric = row_metric(m)
    metrics = m.metrics
    env_threads = {t.get("index"): t for t in m.env.get("threads", []) or []}
    cpus = m.env.get("cpus") or []
    keys = sorted((k for k in metrics if k.startswith(f"{metric}#") and k[len(metric) + 1:].isdigit()),
                  key=lambda k: int(k[len(metric) + 1:]))
    out = []
    for k in keys:
        idx = int(k[len(metric) + 1:])
        cpu = env_threads.get(idx, {}).get("cpu")
        if cpu is None and m.tool == "cyclictest" and idx < len(cpus):
            cpu = cpus[idx]   # cyclictest pins thread i to the i-th CPU of --affinity
        out.append((f"CPU {cpu}" if cpu is not None else f"thread {idx}", metrics[k]))
    if not out and metric in metrics:
        out = [("all CPUs", metrics[metric])]
    return out


def window_series(m: Measurement) -> list[tuple[str, list[tuple[float, float]], float]]:
    """(label, [(seconds since start, max µs)], window s) per thread, from ti_window_max#i
    (or ti_window_max when there are no per-thread series)."""
    metrics = m.metrics
    keys = sorted((k for k in metrics if k.startswith("ti_window_max#")), key=lambda k: int(k.split("#")[1]))
    keys = keys or (["ti_window_max"] if "ti_window_max" in metrics else [])
    labels = dict((i, lbl) for i, (lbl, _) in enumerate(thread_distributions(m)))
    out = []
    for k in keys:
        s = metrics[k]
        vals = s.series or []
        win = (s.window_ns or 1e9) / 1e9
        pts = [((i + 1) * win, v / 1000.0) for i, v in enumerate(vals) if v is not None]
        idx = int(k.split("#")[1]) if "#" in k else None
        out.append((labels.get(idx, "all CPUs") if idx is not None else "all CPUs", pts, win))
    return [o for o in out if o[1]]
