"""A starved latency job: the measuring thread kept off its CPU for a long time, so its
maximum reads in hundreds of milliseconds or seconds and most of its periods were
skipped (docs/verdict.md, "A starved job"). The figures then say only that something
held the CPU at a real-time priority; the hint says what to look at: what held it
(`run --attribute` names it), the RT throttle (kernel.sched_rt_runtime_us, which stops
every real-time task of a CPU for the rest of each period once they used their share,
the measuring thread included), and a real-time task of higher priority on the CPU."""

from __future__ import annotations

from rtgauge.analysis.run.rows import late_periods
from rtgauge.records import Measurement

STARVED_MAX_US = 100_000     # a maximum from 100 ms: a thread kept off its CPU, not a late wake-up


def starved(m: Measurement) -> dict | None:
    """{"max_us", "skipped", "periods"} when the job was starved (a maximum of at least
    STARVED_MAX_US, or more than half of its periods skipped), else None."""
    late = late_periods(m)
    mx = m.metric("ti").max
    max_us = None if mx is None else mx / 1000
    skipped, periods = late.get("skipped"), late.get("periods")
    most_skipped = bool(skipped and periods and skipped * 2 > periods)
    if not most_skipped and (max_us is None or max_us < STARVED_MAX_US):
        return None
    return {"max_us": max_us, "skipped": skipped, "periods": periods}


def _duration(us: float) -> str:
    return f"{us / 1e6:,.3g} s" if us >= 1e6 else f"{us / 1e3:,.3g} ms"


def throttle_text(system: dict) -> str:
    """What the run's facts say of the RT throttle."""
    runtime, period = system.get("rt_runtime_us"), system.get("rt_period_us")
    if runtime is None:
        return "the RT throttle (kernel.sched_rt_runtime_us; not read on this system)"
    if runtime == -1:
        return "not the RT throttle: it was off (kernel.sched_rt_runtime_us = -1)"
    share = f", {runtime / period:.0%} of each {period:,} µs" if period else ""
    return (f"the RT throttle: on (kernel.sched_rt_runtime_us = {runtime:,}{share}); once the real-time tasks "
            "of a CPU used that, the measuring thread waits too: `sysctl kernel.sched_rt_runtime_us=-1` for "
            "the run, or `rtgauge run --tuned --rt-throttling-off`")


def starved_hint(m: Measurement, system: dict | None = None) -> str | None:
    """One sentence for a starved job: what it shows and what to look at, else None."""
    s = starved(m)
    if s is None:
        return None
    what = []
    if s["max_us"] is not None:
        what.append(f"kept off its CPU for up to {_duration(s['max_us'])}")
    if s["skipped"]:
        what.append(f"skipped {s['skipped']:,} of its {s['periods']:,} periods")
    traced = isinstance((m.env or {}).get("attribution"), dict) and not m.env["attribution"].get("unavailable")
    look = ["what held the CPU: " + ("the attribution below names it" if traced else
                                     "run again with --attribute, which names it"),
            throttle_text(system or {}),
            "a real-time task of higher priority on the measured CPU (`ps -eLo pid,cls,rtprio,psr,comm`)"]
    return (f"{m.label} was starved: its measuring thread was {' and '.join(what)}, so something held the CPU "
            f"at a real-time priority. Look at {'; '.join(look)}.")
