"""Host stalls per measurement (docs/engine.md "Host stalls"): what the engine's
non-measuring observer saw (env.stalls) and, per figure, the average with all
samples beside the average without the samples a detected stall touched. The
maximum is never replaced: it stays the true maximum of all samples."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StallFigure:
    metric: str
    unit: str
    count: int             # all samples
    touched: int           # samples a detected host stall touched
    unknown: int           # samples without a time span (never judged)
    avg_all: float | None  # average of all samples
    avg_without: float | None   # average without the touched samples
    p99_all: float | None
    p99_without: float | None
    max_all: float | None  # the true maximum, stall included

    def to_json(self) -> dict:
        return {"metric": self.metric, "unit": self.unit, "samples": self.count,
                "stall_touched": self.touched, "unjudged": self.unknown,
                "avg_all_samples": self.avg_all, "avg_without_stall_touched": self.avg_without,
                "p99_all_samples": self.p99_all, "p99_without_stall_touched": self.p99_without,
                "max_all_samples": self.max_all}


def stall_env(m: dict) -> dict | None:
    s = (m.get("env") or {}).get("stalls")
    return s if isinstance(s, dict) else None


def stall_summary(m: dict) -> dict | None:
    """{observed, reason, count, total_ms, longest_ms, local_delays, cpu, threshold_us}
    or None when the engine recorded nothing (an older engine, another tool)."""
    s = stall_env(m)
    if s is None:
        return None
    def ms(v):
        return round(v / 1e6, 3) if isinstance(v, (int, float)) else None
    return {"observed": bool(s.get("observed")), "reason": s.get("reason"),
            "count": s.get("count"), "total_ms": ms(s.get("total_ns")), "longest_ms": ms(s.get("longest_ns")),
            "local_delays": s.get("local_delays"), "cpu": s.get("cpu"),
            "shares_measured_cpu": s.get("shares_measured_cpu"),
            "threshold_us": (s["threshold_ns"] / 1000 if isinstance(s.get("threshold_ns"), (int, float)) else None),
            "intervals": s.get("intervals") or []}


def stall_figures(m: dict, touched_only: bool = False) -> list[StallFigure]:
    """Per overall figure (no per-thread '#i'): all samples against the samples no
    detected stall touched."""
    s = stall_env(m)
    if not s or not s.get("observed"):
        return []
    out = []
    metrics = m.get("metrics") or {}
    for name, v in (s.get("metrics") or {}).items():
        if "#" in name or not isinstance(v, dict):
            continue
        full = metrics.get(name) or {}
        without = v.get("without") or {}
        touched = int(v.get("touched") or 0)
        if touched_only and touched == 0:
            continue
        out.append(StallFigure(name, full.get("unit") or "ns", int(full.get("count") or 0), touched,
                               int(v.get("unknown") or 0), full.get("avg"), without.get("avg"),
                               full.get("p99"), without.get("p99"), full.get("max")))
    return out


def stall_free(m: dict, metric: str) -> dict | None:
    """The figures of `metric` without stall-touched samples ({count, avg, stddev,
    p50...p9999}, no max), or None when the observer did not run for m."""
    s = stall_env(m)
    if not s or not s.get("observed"):
        return None
    v = (s.get("metrics") or {}).get(metric)
    w = v.get("without") if isinstance(v, dict) else None
    return w if isinstance(w, dict) and w.get("count") else None
