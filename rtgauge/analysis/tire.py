"""The tire sweep of a run: which (masses, threads, policy) points held 100 Hz,
the headline "largest n with zero misses" per thread count and policy, the
real-fast wall times, and the fitted cost-equation terms."""

from __future__ import annotations

from dataclasses import dataclass

from rtgauge.analysis import is_fallback, scalar

HEADLINE_PERIOD_MS = 10.0     # 100 Hz, the published rate
COST_TERMS = ("tswitch", "tipc", "tspring", "tmass", "nswitch", "nipc", "residual", "residualrms")


@dataclass
class TirePoint:
    masses: int
    threads: int
    policy: str
    solver: str
    mode: str
    period_ms: float | None
    misses: int | None
    steps: int | None
    wall_s: float | None
    ts_avg_ns: float | None
    ts_max_ns: float | None
    fallback: bool
    measurement: dict


def tire_points(run: dict) -> list[TirePoint]:
    out = []
    for m in run.get("measurements", []):
        if m.get("test") != "tire" or not m.get("ok"):
            continue
        p = m.get("params") or {}
        if p.get("masses") is None or p.get("threads") is None:
            continue
        ts = (m.get("metrics") or {}).get("ts") or {}
        out.append(TirePoint(
            int(p["masses"]), int(p["threads"]), str(p.get("policy") or (m.get("env") or {}).get("policy") or "?"),
            str(p.get("solver") or "locked"), str(p.get("mode") or "realtime"),
            None if p.get("period_ms") is None else float(p["period_ms"]),
            scalar(m, "misses"), scalar(m, "steps"), scalar(m, "wall_s"),
            ts.get("avg"), ts.get("max"), is_fallback(m), m))
    return out


def realtime_grid(points: list[TirePoint], period_ms: float = HEADLINE_PERIOD_MS) -> dict:
    """{(solver, policy): {(threads, masses): misses}} for the real-time runs at period_ms
    (several runs of one point: the worst)."""
    grid: dict = {}
    for p in points:
        if p.mode != "realtime" or p.period_ms is None or abs(p.period_ms - period_ms) > 1e-9 or p.misses is None:
            continue
        cell = grid.setdefault((p.solver, p.policy), {})
        key = (p.threads, p.masses)
        cell[key] = max(cell.get(key, 0), p.misses)
    return grid


def hard_rt_limits(points: list[TirePoint], period_ms: float = HEADLINE_PERIOD_MS) -> list[dict]:
    """Per solver, policy and thread count: the largest n with zero misses, and the
    smallest n above it that missed (where hard real-time was lost)."""
    out = []
    for (solver, policy), cells in sorted(realtime_grid(points, period_ms).items()):
        for threads in sorted({t for t, _ in cells}):
            row = sorted((n, misses) for (t, n), misses in cells.items() if t == threads)
            held = [n for n, misses in row if misses == 0]
            best = max(held) if held else None
            lost = min((n for n, misses in row if misses > 0 and (best is None or n > best)), default=None)
            out.append({"solver": solver, "policy": policy, "threads": threads, "max_masses": best,
                        "lost_at": lost, "points": len(row)})
    return out


def sweep_limits(run: dict) -> list[dict]:
    """The orchestrator's bisection results (a tire-sweep measurement with metrics
    largest_masses#threads=T,policy=P), in the shape of hard_rt_limits."""
    out = []
    for m in run.get("measurements", []):
        if m.get("test") != "tire-sweep":
            continue
        solver = str((m.get("params") or {}).get("solver") or "locked")
        for name, metric in (m.get("metrics") or {}).items():
            if not name.startswith("largest_masses#"):
                continue
            fields = dict(kv.split("=", 1) for kv in name.split("#", 1)[1].split(",") if "=" in kv)
            try:
                threads = int(fields.get("threads", 0))
            except ValueError:
                continue
            value = metric.get("value")
            out.append({"solver": solver, "policy": fields.get("policy", "?"), "threads": threads,
                        "max_masses": value or None, "lost_at": None, "points": None, "source": "sweep"})
    return out


def headline_limits(run: dict) -> list[dict]:
    """The sweep's bisection results where the run has them, else the grid's."""
    found = {(x["solver"], x["policy"], x["threads"]): x for x in hard_rt_limits(tire_points(run))}
    for x in sweep_limits(run):
        key = (x["solver"], x["policy"], x["threads"])
        if key in found:
            x["lost_at"] = found[key]["lost_at"] if (found[key]["lost_at"] or 0) > (x["max_masses"] or 0) else None
        found[key] = x
    return [found[k] for k in sorted(found)]


def thread_label(threads: int, facts: dict) -> str:
    """The published work chose thread counts qualitatively; say which one this is."""
    cpus, cores = facts.get("cpus"), facts.get("physical_cores")
    names = []
    if threads == 1:
        names.append("one thread")
    if cores and threads == cores:
        names.append("one per core")
    if cpus and threads == cpus:
        names.append("one per logical CPU")
    if cpus and threads == 2 * cpus:
        names.append("two per logical CPU")
    return f"{threads} ({', '.join(names)})" if names and names != ["one thread"] else str(threads)


def realfast_curves(points: list[TirePoint]) -> dict:
    """{(solver, policy): {threads: [(masses, wall_s)]}} for real-fast runs."""
    out: dict = {}
    for p in points:
        if p.mode != "realfast" or p.wall_s is None:
            continue
        out.setdefault((p.solver, p.policy), {}).setdefault(p.threads, []).append((p.masses, p.wall_s))
    for curves in out.values():
        for k in curves:
            curves[k].sort()
    return out


def cost_fits(run: dict) -> list[dict]:
    """Fitted cost-equation terms stored by the orchestrator: every measurement whose
    metrics name the terms of Ts = Nswitch·Tswitch + 4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass."""
    out = []
    for m in run.get("measurements", []):
        metrics = m.get("metrics") or {}
        terms = {}
        for name, metric in metrics.items():
            key = name.lower().replace("_", "").replace("-", "")
            for term in COST_TERMS:
                if key.endswith(term) and "value" in metric:
                    terms[name] = metric
        if terms:
            out.append({"measurement": m, "terms": terms})
    return out
