"""The marks a measurement carries in every output beside its figures, one text each,
decided once: `fallback` (it ran without the real-time scheduling it asked for, so it
says nothing about real time), `not idle` (its condition says idle, but others kept
the measured CPUs busy while it measured; trace/counters.py decides it when measuring,
docs/loads.md) and `traced` (it ran under a kernel trace, whose cost its figures
include)."""

from __future__ import annotations

from rtgauge.records import Measurement

FALLBACK = "fallback: not real-time"
TRACED = "traced: tracing's cost included"


def not_idle_text(m: Measurement) -> str | None:
    """'not idle: others used 48 % of the measured CPUs' for an idle measurement that
    was not idle, else None."""
    if not m.not_idle:
        return None
    share = m.others_load.get("share")
    used = f"{share:.0%}" if isinstance(share, (int, float)) else "more than the threshold"
    return f"not idle: others used {used} of the measured CPUs"


def traced(m: Measurement) -> bool:
    """The job ran under a kernel trace (`run --attribute` or --trace-threshold-us): its
    figures include the tracing's own cost (docs/attribution.md, "The tracing's cost")."""
    env = m.env or {}
    return any(isinstance(env.get(k), dict) and not env[k].get("unavailable") for k in ("attribution", "trace"))


def marks(m: Measurement) -> list[str]:
    """The measurement's marks, in the order outputs show them."""
    out = [FALLBACK] if m.fallback else []
    text = not_idle_text(m)
    return out + ([text] if text else []) + ([TRACED] if traced(m) else [])


def marks_json(m: Measurement) -> dict:
    """The marks as `show --json` gives them beside the stored document: fallback, and
    idle (true / false for an idle measurement that was looked at, else null)."""
    load = m.others_load
    return {"fallback": m.fallback,
            "idle": (not m.not_idle) if m.condition == "idle" and "idle" in load else None}
