"""The hardware-in-the-loop figures of a run: the loop jobs (round trip at the
device, Ti/Ts/Tw at the simulation, frames sent and lost, deadlines missed) and the
sustained-rate sweep (the shortest period per step size). The report lays them out."""

from __future__ import annotations

from rtgauge.catalogue import LOOP, catalogue


def hil_payload(params: dict) -> str:
    """What the simulation does each frame, in words."""
    payload = params.get("payload") or "none"
    if payload == "work":
        return f"work {params.get('work_us')} µs"
    if payload == "tire":
        return f"tire {params.get('masses'):,} masses, {params.get('threads')} threads"
    return "none"


def scalar_value(m: dict, name: str):
    return ((m.get("metrics") or {}).get(name) or {}).get("value")


def loop_measurements(run: dict) -> list[dict]:
    """The run's successful loop jobs (kind "loop" in the engine's catalogue)."""
    return [m for m in run.get("measurements", [])
            if catalogue().kind_of(m.get("test") or "") == LOOP and m.get("ok")]


def sustained_measurements(run: dict) -> list[dict]:
    """The run's successful sustained-rate sweeps."""
    return [m for m in run.get("measurements", []) if m.get("test") == "hil-sustained" and m.get("ok")]


def loop_row(m: dict) -> dict:
    """One loop job's figures (ns for times, counts for frames), None where not measured."""
    params, metrics = m.get("params") or {}, m.get("metrics") or {}
    rt, ti, ts, tw = (metrics.get(k) or {} for k in ("round_trip", "ti", "ts", "tw"))
    return {
        "name": m["name"], "condition": m.get("condition"), "step": hil_payload(params),
        "period_us": params.get("period_us"), "sent": scalar_value(m, "sent"),
        "lost": scalar_value(m, "lost_frames"), "misses": scalar_value(m, "misses"),
        "round_trip_ns": (rt.get("p50"), rt.get("p99"), rt.get("max")),
        "ti_ns": (ti.get("p99"), ti.get("max")), "ts_ns": (ts.get("avg"), ts.get("max")),
        "tw_min_ns": tw.get("min"),
    }


def sustained_rows(m: dict) -> list[tuple[str, float | None, float | None, str | None]]:
    """Per step size of a sustained-rate sweep: (step, shortest period µs, rate Hz, detail)."""
    metrics = m.get("metrics") or {}
    rows = []
    for name, v in sorted((m.get("verdicts") or {}).items()):
        tag = name.split("#", 1)[-1]
        period = (metrics.get(f"shortest_period#{tag}") or {}).get("value")
        rate = (metrics.get(f"sustained_rate#{tag}") or {}).get("value")
        rows.append((tag, period, rate, v.get("detail")))
    return rows
