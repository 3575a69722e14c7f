"""Host stalls per measurement (docs/engine.md "Host stalls"): what the engine's
non-measuring observer saw (env.stalls) and, per figure, the average with all
samples beside the average without the samples a detected stall touched. The
maximum is never replaced: it stays the true maximum of all samples."""

from __future__ import annotations

from dataclasses import dataclass

from rtgauge.records import Measurement


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


def stall_env(m: Measurement) -> dict | None:
    s = m.env.get("stalls")
    return s if isinstance(s, dict) else None


def _count(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else None


def stall_summary(m: Measurement) -> dict | None:
    """{observed, reason, count, total_ms, longest_ms, local_delays, cpu, threshold_us}
    or None when the engine recorded nothing (an older engine, another tool). Values
    of the wrong type (an imported document) read as 0 or None."""
    s = stall_env(m)
    if s is None:
        return None
    def ms(v):
        v = _num(v)
        return None if v is None else round(v / 1e6, 3)
    threshold = _num(s.get("threshold_ns"))
    intervals = s.get("intervals")
    return {"observed": s.get("observed") is True, "reason": str(s.get("reason") or "not recorded"),
            "count": _count(s.get("count")), "total_ms": ms(s.get("total_ns")) or 0.0,
            "longest_ms": ms(s.get("longest_ns")) or 0.0,
            "local_delays": s.get("local_delays") if isinstance(s.get("local_delays"), int) else None,
            "cpu": s.get("cpu") if isinstance(s.get("cpu"), int) else None,
            "shares_measured_cpu": s.get("shares_measured_cpu") is True,
            "threshold_us": None if threshold is None else threshold / 1000,
            "intervals": intervals if isinstance(intervals, list) else []}


def stall_figures(m: Measurement, touched_only: bool = False) -> list[StallFigure]:
    """Per overall figure (no per-thread '#i'): all samples against the samples no
    detected stall touched."""
    s = stall_env(m)
    if not s or not s.get("observed"):
        return []
    out = []
    per = s.get("metrics") if isinstance(s.get("metrics"), dict) else {}
    for name, v in per.items():
        if "#" in name or not isinstance(v, dict):
            continue
        full = m.metric(name)
        without = v.get("without") if isinstance(v.get("without"), dict) else {}
        touched = _count(v.get("touched"))
        if touched_only and touched == 0:
            continue
        out.append(StallFigure(name, str(full.unit or "ns"), _count(full.count), touched,
                               _count(v.get("unknown")), _num(full.avg), _num(without.get("avg")),
                               _num(full.p99), _num(without.get("p99")), _num(full.max)))
    return out


def stall_free(m: Measurement, metric: str) -> dict | None:
    """The figures of `metric` without stall-touched samples ({count, avg, stddev,
    p50...p9999}, no max), or None when the observer did not run for m."""
    s = stall_env(m)
    if not s or not s.get("observed"):
        return None
    per = s.get("metrics") if isinstance(s.get("metrics"), dict) else {}
    v = per.get(metric)
    w = v.get("without") if isinstance(v, dict) else None
    return w if isinstance(w, dict) and _count(w.get("count")) else None
