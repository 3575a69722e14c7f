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


def stall_avg_without(m: dict, metric: str) -> tuple[float | None, int]:
    """(average without stall-touched samples, touched count) of one figure;
    (None, 0) when the observer did not run."""
    for f in stall_figures(m):
        if f.metric == metric:
            return f.avg_without, f.touched
    return None, 0


def stall_text(m: dict) -> str:
    """Short cell: '-' (not recorded), 'not observed', '0', or '2 (longest 72.0 ms)'."""
    s = stall_summary(m)
    if s is None:
        return "-"
    if not s["observed"]:
        return "not observed"
    if not s["count"]:
        return "0"
    return f"{s['count']} (longest {s['longest_ms']:.1f} ms)"


def _us(v) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v / 1000:,.3f}"


def stall_lines(m: dict) -> list[str]:
    """Plain sentences for the terminal: what the observer saw and, for every figure
    a stall touched, the two averages, labelled, and the true maximum."""
    s = stall_summary(m)
    if s is None:
        return []
    name = m.get("name") or m.get("test") or "?"
    if not s["observed"]:
        return [f"{name}: host stalls not observed: {s['reason']}"]
    if not s["count"]:
        return []
    lines = [f"{name}: {s['count']} host stall(s) seen by the observer on CPU {s['cpu']}, "
             f"{s['total_ms']:g} ms in all, longest {s['longest_ms']:g} ms"]
    for f in stall_figures(m, touched_only=True):
        lines.append(f"  {f.metric}: avg {_us(f.avg_all)} µs with all {f.count:,} samples; "
                     f"avg {_us(f.avg_without)} µs without {f.touched} stall-touched sample(s); "
                     f"max {_us(f.max_all)} µs (all samples, the true maximum)")
    return lines
