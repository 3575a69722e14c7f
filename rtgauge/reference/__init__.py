"""The published reference figures (published.csv, a copy of the shared
reference/published.csv) and the mapping from their test names to rtgauge's
measurements, so a report can put a measured figure beside the published one.

A published value may be a bound ("<0.1", ">1000000"); it is kept as text for
display and as a number (the bound) with `bound` set to "<" or ">"."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

CSV_PATH = Path(__file__).resolve().parent / "published.csv"
UNIT_NS = {"ns": 1.0, "us": 1000.0, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class Published:
    source: str
    platform: str
    system: str
    condition: str        # idle | loaded | cpu-stressed
    test: str             # the publication's test name
    statistic: str        # min | avg | max | stddev | value
    text: str             # the value as published ("<0.1", "14000")
    value: float | None   # the number (the bound for "<x"/">x")
    bound: str            # "", "<" or ">"
    unit: str
    note: str

    @property
    def ns(self) -> float | None:
        """The value in nanoseconds when it is a time, else None."""
        scale = UNIT_NS.get(self.unit)
        return None if scale is None or self.value is None else self.value * scale

    @property
    def label(self) -> str:
        return f"{self.system} ({self.platform.split(' ')[0]} {self.source.split('-')[-1]})"


def parse_value(text: str) -> tuple[float | None, str]:
    text = text.strip()
    bound = text[0] if text[:1] in "<>" else ""
    try:
        return float(text.lstrip("<>")), bound
    except ValueError:
        return None, bound


@functools.lru_cache(maxsize=1)
def load_published(path: str | None = None) -> tuple[Published, ...]:
    rows = []
    with open(path or CSV_PATH, newline="") as f:
        for r in csv.DictReader(f):
            value, bound = parse_value(r["value"])
            rows.append(Published(r["source"], r["platform"], r["system"], r["condition"], r["test"],
                                  r["statistic"], r["value"].strip(), value, bound, r["unit"], r.get("note") or ""))
    return tuple(rows)


# Published test name -> how rtgauge measures the same thing: (engine test, metric,
# params that must match). The metric names are the engine tests' (docs/engine.md);
# a row the run does not contain simply has no measured figure beside it.
# docs/report.md lists this mapping for readers.
PUBLISHED_TO_MEASURED: dict[str, tuple[str, str, dict]] = {
    # Rhealstone-style, i7-3930K (ns, worst case)
    "task_switch": ("switch", "switch", {"threads": 2}),
    "preemption": ("preempt", "preempt", {}),
    "ipc_semaphore": ("shuffle", "shuffle", {"primitive": "sem"}),
    # PowerPC 604 RTL/RTEMS/vxWorks (µs)
    "interrupt_latency": ("latency", "ti", {}),
    "context_switch": ("switch", "switch", {"threads": 2}),
    # QNX vs Linux-rt (µs)
    "CLK-P-DUR clock tick duration": ("tick", "gap", {}),
    "THR-P-SLS switch 2 threads": ("switch", "switch", {"threads": 2}),
    "THR-P-SLS switch 10 threads": ("switch", "switch", {"threads": 10}),
    "THR-P-SLS switch 128 threads": ("switch", "switch", {"threads": 128}),
    "THR-P-SLS switch 1000 threads": ("switch", "switch", {"threads": 1000}),
    "THR-P-NEW create never-run": ("thread", "create_never_run", {}),
    "THR-P-NEW delete never-run": ("thread", "delete_never_run", {}),
    "THR-P-NEW create run-and-terminate": ("thread", "create_run_terminate", {}),
    "THR-P-NEW delete run-and-terminate": ("thread", "delete_run_terminate", {}),
    "THR-P-NEW create run-and-block": ("thread", "create_run_block", {}),
    "THR-P-NEW delete run-and-block": ("thread", "delete_run_block", {}),
    "SEM-P-NEW create used": ("sem", "create_used", {}),
    "SEM-P-NEW delete used": ("sem", "delete_used", {}),
    "SEM-P-NEW create never-used": ("sem", "create_unused", {}),
    "SEM-P-NEW delete never-used": ("sem", "delete_unused", {}),
    "SEM-P-ARN acquire": ("sem", "acquire", {}),
    "SEM-P-ARN release": ("sem", "release", {}),
    "SEM-P-ARC acquire 128 waiters": ("sem", "acquire_contended", {}),
    "SEM-P-ARC release 128 waiters": ("sem", "release_contended", {}),
    "MUT-P-ARN acquire": ("mutex", "acquire", {}),
    "MUT-P-ARN release": ("mutex", "release", {}),
    "MUT-P-ARC acquire": ("mutex", "acquire_contended", {}),
    "MUT-P-ARC release": ("mutex", "release_contended", {}),
    "IRQ-P-LAT interrupt latency": ("latency", "ti", {}),
    # ARM Cortex-A8 (µs): cyclictest and Xenomai's latency tool measure what our latency test does
    "cyclictest": ("latency", "ti", {}),
    "xenomai_latency_user": ("latency", "ti", {}),
}

# Published condition -> rtgauge load condition.
CONDITION_MAP = {"idle": "idle", "loaded": "cpu", "cpu-stressed": "cpu"}


def published_for(test: str, metric: str, params: dict | None = None, condition: str = "idle") -> list[Published]:
    """Published rows that measure what (test, metric, params, condition) measures."""
    params = params or {}
    out = []
    for p in load_published():
        mapped = PUBLISHED_TO_MEASURED.get(p.test)
        if not mapped or CONDITION_MAP.get(p.condition, p.condition) != condition:
            continue
        m_test, m_metric, m_params = mapped
        if m_test == test and m_metric == metric and all(
                str(params.get(k)) == str(v) for k, v in m_params.items()):
            out.append(p)
    return out


def tire_published() -> list[Published]:
    return [p for p in load_published() if p.test.startswith("tire_")]
