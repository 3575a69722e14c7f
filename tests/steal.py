"""The one rule the load-robust timing claims share: lateness the test did not make is
accepted only when the hypervisor counted at least half of it as steal on that CPU
(/proc/stat, in clock ticks: one tick of slack). Lateness an engine or an observer made
up comes with no steal."""

from __future__ import annotations

from rtgauge.trace.counters import read_file, steal_between


def snapshot() -> str:
    return read_file("/proc/stat")


def stolen_ms(before: str, cpu: int) -> tuple[float, float]:
    """(ms stolen from `cpu` since the snapshot `before`, the resolution in ms)."""
    steal = steal_between(before, snapshot(), [cpu])
    return steal.get("total_ms", 0.0), steal.get("resolution_ms", 10.0)


def covers(stolen: float, tick: float, late_ms: float) -> bool:
    return stolen + tick >= 0.5 * late_ms
