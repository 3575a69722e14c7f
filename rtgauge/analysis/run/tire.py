"""The tire model of a run (docs/tire.md): the real-time maps (hard: did every step
meet its deadline; soft: how many missed), one per mode and period (the 10 ms map,
the 0.5 ms pretest map, any other period a job asked for), the headline "largest n
with zero misses" per thread count and policy at the period it was measured, the
real-fast curves (wall time against masses) and the fitted cost-equation terms.

A run's tire measurements are the plan's `tire` jobs and the sweep's probes (each
stored as its own `tire` measurement) alike. A job without an explicit --period-ms
ran at its mode's default (10 ms, pretest 0.5 ms); it is placed at that period, as
the engine's physics.period_ms also says."""

from __future__ import annotations

from dataclasses import dataclass

from rtgauge.defaults import TIRE_PERIOD_MS
from rtgauge.records import Measurement, Run
from rtgauge.analysis.run.rows import late_periods
from rtgauge.published import Published, tire_published

HEADLINE_PERIOD_MS = 10.0     # 100 Hz, the published rate
STUDY_STEPS = 6000            # the study's 60 s of simulated time at 10 ms
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
    measurement: Measurement
    steps_asked: int | None = None
    stopped_on_miss: bool = False
    late_in_stalls: int | None = None   # late steps a host stall the observer saw overlapped


    @property
    def complete(self) -> bool:
        """Ran every step it was asked for, so its miss count is whole (not stopped
        at the first miss, not cut by the time limit)."""
        return not self.stopped_on_miss and (self.steps_asked is None or self.steps == self.steps_asked)


def tire_points(run: Run) -> list[TirePoint]:
    out = []
    for m in run.measurements:
        if m.test != "tire" or not m.ok:
            continue
        p = m.params
        masses, threads = masses_value(p.get("masses")), masses_value(p.get("threads"))
        if not masses or not threads:      # none, or not a size (a crafted import)
            continue
        ts = m.metric("ts")
        mode = str(m.param("mode") or "realtime")
        out.append(TirePoint(
            masses, threads, str(m.param("policy") or m.policy or "?"),
            str(m.param("solver") or "locked"), mode, None if m.period_ns is None else m.period_ns / 1e6,
            late_periods(m)["misses"], m.scalar("steps"), m.scalar("wall_s"),
            ts.avg, ts.max, m.fallback, m,
            masses_value(p.get("steps")), bool(m.param("stop_on_miss")),
            late if isinstance(late := m.scalar("late_in_stalls"), int) else None))
    return out


def same_period(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


def map_keys(points: list[TirePoint]) -> list[tuple[str, float]]:
    """(mode, period) of every real-time map the points make, the 10 ms one first."""
    keys = {(p.mode, p.period_ms) for p in points if p.mode != "realfast" and p.period_ms and p.misses is not None}
    return sorted(keys, key=lambda k: (k[0] != "realtime", not same_period(k[1], HEADLINE_PERIOD_MS), -k[1]))


def map_attempts(points: list[TirePoint], period_ms: float = HEADLINE_PERIOD_MS, mode: str | None = None,
                 soft: bool = False) -> dict:
    """{(solver, policy): {(threads, masses): [misses of each run, in the order run]}}
    for the runs at period_ms (of MODE, or of realtime and pretest alike). soft: only
    runs whose miss count is whole (run to the end)."""
    grid: dict = {}
    for p in points:
        if p.mode == "realfast" or (mode and p.mode != mode) or not same_period(p.period_ms, period_ms) \
                or p.misses is None or (soft and not p.complete):
            continue
        grid.setdefault((p.solver, p.policy), {}).setdefault((p.threads, p.masses), []).append(p.misses)
    return grid


def map_cells(points: list[TirePoint], period_ms: float = HEADLINE_PERIOD_MS, mode: str | None = None,
              soft: bool = False) -> dict:
    """{(solver, policy): {(threads, masses): misses}}. A point run more than once (the
    sweep repeats a late probe to show whether its misses recur) is late on the hard
    map when ANY run missed (its largest count); the soft map shows its first run's
    count (the repeats are in map_attempts, shown apart). Nothing is smoothed away."""
    pick = (lambda runs: runs[0]) if soft else max
    return {k: {cell: pick(runs) for cell, runs in cells.items()}
            for k, cells in map_attempts(points, period_ms, mode, soft).items()}


def hard_rt_limits(points: list[TirePoint], period_ms: float | None = None) -> list[dict]:
    """Per period, solver, policy and thread count of the real-time runs: the smallest n
    that missed (where hard real-time was lost), the largest n below it with zero
    misses (held up to), the sizes above the loss that held again (a sporadic loss),
    and whether every size tried held. period_ms None: every period measured."""
    out = []
    periods = [period_ms] if period_ms is not None else [k[1] for k in map_keys(points) if k[0] == "realtime"]
    for period in periods:
        for (solver, policy), cells in sorted(map_cells(points, period, "realtime").items()):
            for threads in sorted({t for t, _ in cells}):
                row = sorted((n, misses) for (t, n), misses in cells.items() if t == threads)
                lost = next((n for n, misses in row if misses > 0), None)
                held = [n for n, misses in row if misses == 0 and (lost is None or n < lost)]
                best = max(held) if held else None
                out.append({"solver": solver, "policy": policy, "threads": threads, "period_ms": period,
                            "max_masses": best, "lost_at": lost, "points": len(row),
                            "held_above_lost": [n for n, misses in row if misses == 0 and lost and n > lost],
                            "all_held": all(misses == 0 for _, misses in row)})
    return out


def masses_value(v) -> int | None:
    """A stored size as a whole number of masses; None for anything else (a crafted
    import's string or negative value is no size, and would break the tables' format)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        return None
    return int(v) if v >= 0 else None


def sweep_limits(run: Run) -> list[dict]:
    """The orchestrator's bisection results (a tire-sweep measurement with metrics
    largest_masses#threads=T,policy=P), in the shape of hard_rt_limits."""
    out = []
    for m in run.measurements:
        if m.test != "tire-sweep":
            continue
        solver = str(m.param("solver") or "locked")
        period = float(m.param("period_ms") or HEADLINE_PERIOD_MS)
        for name, metric in m.metrics.items():
            if not name.startswith("largest_masses#"):
                continue
            fields = dict(kv.split("=", 1) for kv in name.split("#", 1)[1].split(",") if "=" in kv)
            try:
                threads = int(fields.get("threads", 0))
            except ValueError:
                continue
            value = masses_value(metric.value)
            lost = masses_value(m.scalar("lost_at_masses#" + name.split("#", 1)[1]))
            out.append({"solver": solver, "policy": fields.get("policy", "?"), "threads": threads,
                        "period_ms": period, "max_masses": value or None, "lost_at": lost or None,
                        "points": None, "source": "sweep",
                        # a sweep that stored no lost size predates lost_at_masses: unknown, not "all held"
                        "all_held": False})
    return out


def headline_limits(run: Run) -> list[dict]:
    """The sweep's bisection results where the run has them, else the grid's; per
    period (the 10 ms ones first), solver, policy and thread count. Each says the
    period it was measured at (period_ms)."""
    def key(x: dict) -> tuple:
        return (not same_period(x["period_ms"], HEADLINE_PERIOD_MS), x["period_ms"], x["solver"], x["policy"],
                x["threads"])
    found = {key(x): x for x in hard_rt_limits(tire_points(run))}
    for x in sweep_limits(run):
        k = key(x)
        if k in found and not x["lost_at"]:
            grid_lost = found[k]["lost_at"]
            x["lost_at"] = grid_lost if (grid_lost or 0) > (x["max_masses"] or 0) else None
        if not x["lost_at"] and x["max_masses"] is None:
            x["all_held"] = False
        x["held_above_lost"] = found[k].get("held_above_lost", []) if k in found else []
        found[k] = x
    return [found[k] for k in sorted(found)]


def period_text(period_ms: float | None) -> str:
    """'10 ms (100 Hz)', '0.5 ms (2 kHz)'."""
    if not period_ms:
        return "no period"
    hz = 1000.0 / period_ms
    return f"{period_ms:g} ms ({hz / 1000:g} kHz)" if hz >= 1000 else f"{period_ms:g} ms ({hz:g} Hz)"


def held_text(lim: dict) -> str:
    """What the headline adds after the size: where it was lost (and any size above
    that held again: the loss was sporadic), or that nothing lost it."""
    if lim.get("lost_at"):
        again = lim.get("held_above_lost") or []
        return f"lost at {lim['lost_at']:,}" + (f"; held again at {', '.join(f'{n:,}' for n in again)}"
                                                   if again else "")
    if lim.get("all_held") and lim.get("max_masses"):
        return "held at every size tried"
    return ""


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
    """{(solver, policy): {threads: [(masses, wall_s)]}} for real-fast runs that
    computed every step (a run cut by its time limit has no whole wall time); several
    runs of one size: the fastest."""
    out: dict = {}
    best: dict = {}
    for p in points:
        if p.mode != "realfast" or p.wall_s is None or not p.complete:
            continue
        k = (p.solver, p.policy, p.threads, p.masses)
        best[k] = min(best.get(k, p.wall_s), p.wall_s)
    for (solver, policy, threads, masses), wall in best.items():
        out.setdefault((solver, policy), {}).setdefault(threads, []).append((masses, wall))
    for curves in out.values():
        for k in curves:
            curves[k].sort()
    return out


def cost_fits(run: Run) -> list[dict]:
    """Fitted cost-equation terms stored by the orchestrator: every measurement whose
    metrics name the terms of Ts = Nswitch·Tswitch + 4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass.
    {"measurement": Measurement, "terms": {name: Metric}}. Not the engine's own tire
    runs: their t_spring, t_mass and t_ipc are measured constants of one run (the cost
    model reads them, rtgauge/analysis/studies/tirecost.py), not a fit; taken as fits,
    the full study's report drew a fit table for every probe, hundreds of them."""
    out = []
    for m in run.measurements:
        if m.test == "tire":
            continue
        terms = {}
        for name, metric in m.metrics.items():
            key = name.lower().replace("_", "").replace("-", "")
            for term in COST_TERMS:
                if key.endswith(term) and metric.has("value"):
                    terms[name] = metric
        if terms:
            out.append({"measurement": m, "terms": terms})
    return out


def published_cost_term(name: str) -> Published | None:
    """The published figure of a fitted cost term (by the end of its metric name), if any."""
    pub = {p.test.replace("tire_cost_", "").lower(): p for p in tire_published() if p.test.startswith("tire_cost_")}
    return next((p for k, p in pub.items() if name.lower().replace("_", "").endswith(k)), None)


def published_hard_limits() -> list[Published]:
    """The published hard real-time limits of the tire model (per system and threads)."""
    return [p for p in tire_published() if p.test.startswith("tire_hard_rt")]


# What each published limit is (the study, section 4.4 and Figs. 9-10): for Xenomai the
# largest size that held hard real time; for Linux the size at which it was lost. The
# two are different figures and never share a label.
PUBLISHED_LIMIT_KIND = {"Xenomai": "held up to", "Linux": "lost at"}


def published_limit_kind(p: Published) -> str:
    return next((kind for name, kind in PUBLISHED_LIMIT_KIND.items() if p.system.startswith(name)), "held up to")


def published_limit_threads(p: Published) -> str:
    """'any', '1', '12 (one per logical CPU)'."""
    return p.test.split("threads=")[-1]


# ---- the pretest's thread findings (the study's Fig. 8) --------------------------

def thread_ceiling(rows: dict[int, list[dict]], logical_cpus: int | None = None) -> dict:
    """From the pretest rows per thread count (cells {masses, holds}, smallest model
    first): the fewest threads whose pretest missed a deadline at its smallest model
    (the study's first miss, at 40 threads), the fewest threads at which most sizes
    tried missed, and the thread ceiling: the largest thread count tried below that
    one (the study's 24: above it most sizes missed; the largest count it then used).
    No count mostly missing: the ceiling is at least the largest tried (ceiling_bound
    ">="); the fewest tried already mostly missing: no ceiling (None)."""
    tried = sorted(t for t in rows if rows[t])
    first = next((t for t in tried if not rows[t][0]["holds"]), None)
    mostly = next((t for t in tried if sum(not c["holds"] for c in rows[t]) * 2 > len(rows[t])), None)
    below = [t for t in tried if mostly is None or t < mostly]
    return {"first_miss_threads": first, "mostly_missing_threads": mostly,
            "ceiling_threads": below[-1] if below else None,
            "ceiling_bound": ">=" if below and mostly is None else "",
            "smallest_models": {str(t): rows[t][0]["masses"] for t in tried},
            "threads_tried": tried, "logical_cpus": logical_cpus}


def published_pretest() -> dict:
    """The study's pretest figures (Linux, the fair scheduler, 12 logical CPUs):
    {"first_miss_threads": Published, "ceiling_threads": Published}, those present."""
    names = {"tire_pretest_first_miss_threads": "first_miss_threads",
             "tire_pretest_thread_ceiling": "ceiling_threads"}
    return {names[p.test]: p for p in tire_published() if p.test in names}


PUBLISHED_LOGICAL_CPUS = 12     # the study's i7-3930K: 6 cores, 12 logical CPUs


def pretest_threads(run: Run) -> list[dict]:
    """Per solver and policy of the run's pretest map (0.5 ms): thread_ceiling of its
    rows (a cell holds when every run of it met every deadline), with the published
    figures beside it. A row is the thread count's sizes in order, smallest first."""
    out = []
    period = TIRE_PERIOD_MS["pretest"]
    cpus = run.system.get("cpus") if isinstance(run.system.get("cpus"), int) else None
    pub = published_pretest()
    for (solver, policy), cells in sorted(map_cells(tire_points(run), period, "pretest").items()):
        rows: dict[int, list[dict]] = {}
        for (t, n), misses in sorted(cells.items()):
            rows.setdefault(t, []).append({"masses": n, "holds": misses == 0})
        found = thread_ceiling(rows, cpus)
        out.append({"solver": solver, "policy": policy, "period_ms": period, **found,
                    "published": {k: {"threads": int(p.value), "system": p.system, "platform": p.platform,
                                      "logical_cpus": PUBLISHED_LOGICAL_CPUS,
                                      "per_logical_cpu": round(p.value / PUBLISHED_LOGICAL_CPUS, 2),
                                      "note": p.note}
                                  for k, p in pub.items() if p.value is not None}})
    return out


def pretest_threads_sentence(c: dict) -> str:
    """One finding set of pretest_threads (or the sweep's) in a sentence, each measured
    figure with the study's beside it, labelled as published."""
    cpus = c.get("logical_cpus")
    pub = c.get("published") or {k: {"threads": int(p.value), "system": p.system,
                                      "per_logical_cpu": round(p.value / PUBLISHED_LOGICAL_CPUS, 2)}
                                  for k, p in published_pretest().items() if p.value is not None}

    def beside(key: str) -> str:
        p = pub.get(key)
        return (f" (published: {p['threads']} threads, {p['per_logical_cpu']:g} per logical CPU, "
                f"{p['system']}, {PUBLISHED_LOGICAL_CPUS} logical CPUs)") if p else ""

    tried = c.get("threads_tried") or []
    first = c.get("first_miss_threads")
    if first:
        n = (c.get("smallest_models") or {}).get(str(first))
        paren = ([f"{n:,} masses"] if n else []) + ([f"{first / cpus:.3g} per logical CPU"] if cpus else [])
        text = f"first miss at the smallest model with {first} threads" + (f" ({', '.join(paren)})" if paren else "")
    else:
        text = f"no miss at the smallest model up to {max(tried) if tried else 0} threads"
    text += beside("first_miss_threads")
    ceiling = c.get("ceiling_threads")
    if ceiling:
        text += (f"; thread ceiling {'at least ' if c.get('ceiling_bound') else ''}{ceiling} threads"
                 + (f" ({ceiling / cpus:.3g} per logical CPU)" if cpus else "")
                 + (" (no thread count tried missed at most sizes)" if c.get("ceiling_bound") else ""))
    else:
        text += "; no thread ceiling: the fewest threads tried already missed at most sizes"
    return text + beside("ceiling_threads")


def steps_label(steps: set) -> str:
    """'6,000 steps' or, shorter than the study's, '300 steps (short variant; the study: 6,000)'."""
    steps = sorted(s for s in steps if s)
    if not steps:
        return "? steps"
    text = ", ".join(f"{s:,}" for s in steps) + " steps"
    return text + (f" (short variant; the study: {STUDY_STEPS:,})" if min(steps) < STUDY_STEPS else "")


def tire_summary(run: Run) -> dict:
    """What the report shows of the tire model, as data (for `show --json`): the
    maps per mode and period (hard and soft cells), the headline limits, the
    real-fast curves."""
    points = tire_points(run)
    maps = []
    for mode, period in map_keys(points):
        hard, soft = map_cells(points, period, mode), map_cells(points, period, mode, soft=True)
        runs = map_attempts(points, period, mode)
        for solver, policy in sorted(hard):
            pts = [p for p in points if p.mode == mode and same_period(p.period_ms, period)
                   and p.solver == solver and p.policy == policy]
            maps.append({"mode": mode, "period_ms": period, "solver": solver, "policy": policy,
                         "steps": sorted({p.steps_asked or p.steps for p in pts if p.steps_asked or p.steps}),
                         "cells": [{"threads": t, "masses": n, "misses": v,
                                    "hard_realtime": v == 0,
                                    "soft_misses": soft.get((solver, policy), {}).get((t, n)),
                                    "attempts": runs.get((solver, policy), {}).get((t, n), [])}
                                   for (t, n), v in sorted(hard[(solver, policy)].items())]})
    curves = [{"solver": solver, "policy": policy, "threads": t,
               "points": [{"masses": n, "wall_s": w} for n, w in pts]}
              for (solver, policy), per in sorted(realfast_curves(points).items()) for t, pts in sorted(per.items())]
    return {"maps": maps, "limits": headline_limits(run), "realfast": curves,
            "pretest_threads": [dict(c, text=pretest_threads_sentence(c)) for c in pretest_threads(run)]}
