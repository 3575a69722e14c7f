"""The hardware-in-the-loop figures of a run: the loop jobs (round trip at the
device, Ti/Ts/Tw at the simulation, frames sent and lost, deadlines missed) and the
sustained-rate sweep (the shortest period per step size). The report lays them out."""

from __future__ import annotations

from rtgauge.records import Measurement, Run
from rtgauge.analysis.run.rows import late_periods
from rtgauge.catalogue import LOOP, catalogue


def hil_payload(params: dict) -> str:
    """What the simulation does each frame, in words."""
    payload = params.get("payload") or "none"
    if payload == "work":
        return f"work {params.get('work_us')} µs"
    if payload == "tire":
        return f"tire {params.get('masses'):,} masses, {params.get('threads')} threads"
    return "none"


def loop_measurements(run: Run) -> list[Measurement]:
    """The run's successful loop jobs (kind "loop" in the engine's catalogue)."""
    return [m for m in run.measurements if catalogue().kind_of(m.test) == LOOP and m.ok]


def sustained_measurements(run: Run) -> list[Measurement]:
    """The run's successful sustained-rate sweeps."""
    return [m for m in run.measurements if m.test == "hil-sustained" and m.ok]


def loop_row(m: Measurement) -> dict:
    """One loop job's figures (ns for times, counts for frames), None where not measured."""
    rt, ti, ts, tw = (m.metric(k) for k in ("round_trip", "ti", "ts", "tw"))
    return {
        "name": m.label, "condition": m.condition, "step": hil_payload(m.params),
        "period_us": m.period_us, "sent": m.scalar("sent"),
        "lost": m.scalar("lost_frames"), "misses": late_periods(m)["misses"],
        "round_trip_ns": (rt.p50, rt.p99, rt.max), "ti_ns": (ti.p99, ti.max), "ts_ns": (ts.avg, ts.max),
        "tw_min_ns": tw.min,
    }


def sustained_rows(m: Measurement) -> list[tuple[str, float | None, float | None, str | None]]:
    """Per step size of a sustained-rate sweep: (step, shortest period µs, rate Hz, detail)."""
    rows = []
    for name, v in sorted(m.verdicts.items()):
        tag = name.split("#", 1)[-1]
        rows.append((tag, m.scalar(f"shortest_period#{tag}"), m.scalar(f"sustained_rate#{tag}"), v.detail))
    return rows
