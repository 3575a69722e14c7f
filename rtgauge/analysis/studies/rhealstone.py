"""The Rhealstone composite figure of a stored run.

Kar & Porter (1989) measure six component times of a real-time system and invert their
mean: with t1..t6 in seconds,

    Rhealstones per second = 1 / ((t1 + t2 + t3 + t4 + t5 + t6) / 6)

so a faster system has the larger figure. The components and the stored measurement
each one is taken from (engine test / metric):

    task switch            switch / switch        (2 threads preferred: Kar's two tasks)
    preemption             preempt / preempt      (--event sem preferred)
    interrupt latency      latency / ti           (timer interrupt to thread: the only
                                                   interrupt user space can measure)
    semaphore shuffle      shuffle / shuffle      (--primitive sem preferred)
    deadlock break         deadlock-break / deadlock_break  (--protocol inherit preferred)
    intertask message      message / latency      (--transport mq preferred)

We give two figures: from the averages (Kar & Porter's) and from the worst cases (max),
the one that matters for real time. A component that the run did not measure is listed
in "missing" and the figure is the mean of the others ("complete": false): such a
figure is not comparable with a complete one. Only engine measurements that finished
(ok) count; cross-checks (cyclictest) are not mixed in. Arithmetic is exact
(fractions) until the final figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from rtgauge.records import Measurement, Metric, Run

NS_PER_UNIT = {"ns": 1, "us": 1000, "µs": 1000, "ms": 1_000_000, "s": 1_000_000_000}


@dataclass(frozen=True)
class Component:
    name: str
    test: str
    metric: str
    prefer: dict          # params that pick the canonical variant among several


COMPONENTS = (
    Component("task_switch", "switch", "switch", {"threads": 2}),
    Component("preemption", "preempt", "preempt", {"event": "sem"}),
    Component("interrupt_latency", "latency", "ti", {}),
    Component("semaphore_shuffle", "shuffle", "shuffle", {"primitive": "sem"}),
    Component("deadlock_break", "deadlock-break", "deadlock_break", {"protocol": "inherit"}),
    Component("message_latency", "message", "latency", {"transport": "mq"}),
)


def rhealstone_figures(run: Run) -> list[dict]:
    """One figure per load condition of a run as returned by Store.get_run."""
    measurements = run.measurements
    system = {"hostname": run.extra.get("hostname"), "kernel": run.extra.get("kernel_release")}
    conditions = []
    for m in measurements:
        c = m.condition or ""
        if c not in conditions:
            conditions.append(c)
    figures = []
    for c in conditions:
        fig = rhealstone(measurements, c)
        if fig["components"]:
            figures.append({"system": system, **fig})
    return figures


def rhealstone(measurements: list[Measurement], condition: str | None = None) -> dict:
    """The figure from the measurements of one condition (None: all of them)."""
    chosen = {}
    for comp in COMPONENTS:
        m = _pick(comp, [x for x in measurements if condition is None or (x.condition or "") == condition])
        if m is not None:
            metric = m.metric(comp.metric)
            scale = NS_PER_UNIT.get(metric.unit or "ns")
            if scale is None:
                continue
            avg, worst = _stat(metric, "avg"), _stat(metric, "max")
            chosen[comp.name] = {
                "test": comp.test, "metric": comp.metric, "measurement": m.label,
                "avg_ns": float(avg * scale), "max_ns": float(worst * scale),
                "_avg": avg * scale, "_max": worst * scale,
            }
    missing = [c.name for c in COMPONENTS if c.name not in chosen]
    avg_fig, mean_avg = _invert_mean([v.pop("_avg") for v in chosen.values()])
    worst_fig, mean_max = _invert_mean([v.pop("_max") for v in chosen.values()])
    return {
        "condition": condition,
        "components": chosen,
        "missing": missing,
        "complete": not missing,
        "mean_avg_ns": mean_avg,
        "mean_max_ns": mean_max,
        "rhealstones_avg": avg_fig,
        "rhealstones_worst": worst_fig,
    }


def _invert_mean(times_ns: list[Fraction]) -> tuple[float | None, float | None]:
    """(1 / mean in seconds, mean in ns); None for no components or a zero mean."""
    if not times_ns:
        return None, None
    mean = sum(times_ns, Fraction(0)) / len(times_ns)
    if mean <= 0:
        return None, float(mean)
    return float(Fraction(1_000_000_000) / mean), float(mean)


def _stat(metric: Metric, key: str) -> Fraction:
    """A distribution's avg or max, or a scalar's value, exactly."""
    v = getattr(metric, key)
    if v is None:
        v = metric.value
    return Fraction(v)


def _usable(m: Measurement, comp: Component) -> bool:
    if m.test != comp.test or m.tool != "engine" or m.cross_check:
        return False
    if m.ok is False:
        return False
    if comp.metric not in m.metrics:
        return False
    metric = m.metrics[comp.metric]
    has = lambda k: isinstance(getattr(metric, k), (int, float)) and not isinstance(getattr(metric, k), bool)
    return (has("avg") and has("max")) or has("value")


def _pick(comp: Component, measurements: list[Measurement]) -> Measurement | None:
    """The canonical measurement of a component: preferred params first, then (for the
    switch) the fewest threads, then the first stored."""
    candidates = [m for m in measurements if _usable(m, comp)]
    if not candidates:
        return None

    def key(item):
        i, m = item
        params = m.params
        mismatches = sum(1 for k, v in comp.prefer.items() if params.get(k) != v)
        threads = params.get("threads") if isinstance(params.get("threads"), int) else 0
        return (mismatches, threads, i)

    return min(enumerate(candidates), key=key)[1]


def format_figures(figures: list[dict]) -> str:
    """A few lines for a terminal."""
    lines = []
    for f in figures:
        host = f["system"].get("hostname") or "?"
        kernel = f["system"].get("kernel") or "?"
        avg, worst = f["rhealstones_avg"], f["rhealstones_worst"]
        text = (f"Rhealstone {host} {kernel} [{f['condition'] or '-'}]: "
                f"{_fmt(avg)}/s from averages, {_fmt(worst)}/s from worst cases")
        if f["missing"]:
            text += f" (partial: missing {', '.join(f['missing'])})"
        lines.append(text)
    return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"
