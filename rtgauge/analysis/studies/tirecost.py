"""The published cost equation of the tire model, with its constants measured
directly and tested by prediction (docs/tire.md "Cost equation"):

    Ts = Nswitch·Tswitch + 4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass

The engine's locked solver times its phases on sampled steps, which gives per
run Tspring (one spring force), Tmass (one mass integration) and Tipc (one lock
operation with the copy it guards; the lock term counts the 6e + 4 operations
the solver really makes per thread and step, the published 4·e·Nipc); Nswitch
is eq. 2's: the switches not planned by the solver's code, the solver threads'
involuntary context switches (ru_nivcsw: a time slice ended, a task preempted),
0 under FIFO with a CPU a thread. The voluntary ones less the planned sleeps
until the next period are Nwait: the locked solver's workers waiting for their
release and for the others' shares (its barrier, which the study's solver did
not have), and waits on a contended node lock. Tswitch is the step time not
spent in the timed phases, per switch of either kind, measured within the runs
(the switch microbenchmark's same-CPU yield is shown beside it; the solver's
switches are wake-ups of a blocked thread on another CPU, dearer). Constants
measured on some configurations predict the step time of the others:

    Ts_pred = r·(ops·Tipc + (2e+1)·Tspring + e·Tmass) + (Nswitch + Nwait)·Tswitch

with r = ceil(threads / CPUs) the shares one CPU runs in sequence (threads are
pinned round-robin; for the paper's solver r = 1: each thread's Ts is its own
share, timed from when it runs, and the wait for its CPU is its Ti) and Nswitch
and Nwait counted over all solver threads per step and divided by the CPUs used
(what one CPU goes through per step). The
measured Ts is the median step time (the mean of a short run is pulled by a
single host stall; both are kept)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rtgauge.records import Measurement, Run

CONSTANTS = ("Tspring", "Tmass", "Tipc")


@dataclass
class CostPoint:
    masses: int
    threads: int
    policy: str
    mode: str
    period_ms: float | None
    cpus: int                # distinct CPUs the solver threads use
    e: int                   # masses of the largest share
    lock_ops: int            # lock operations of that share per step
    nswitch: float           # eq. 2's Nswitch: involuntary switches per step and CPU (all solver threads / cpus)
    ts_median_ns: float
    ts_mean_ns: float
    t_spring: float
    t_mass: float
    t_ipc: float
    share_ns: float          # the slowest share's timed phases (medians over the sampled steps)
    ts_p99_ns: float | None = None
    solver: str = "locked"
    nwait: float = 0.0       # voluntary switches less the planned period sleeps, per step and CPU

    @property
    def label(self) -> str:
        return f"n={self.masses:,}, {self.threads} thr, {self.policy}"


def cost_point(doc: dict) -> CostPoint | None:
    """A point from an engine `tire` document (read as a record here, once); None
    when it has none (measured_point)."""
    return measured_point(Measurement.from_dict(doc if isinstance(doc, dict) else {}))


def measured_point(m: Measurement) -> CostPoint | None:
    """A point from a tire measurement of the locked solver with timed phases (its
    params, env and metrics suffice); None when it has none."""
    if m.test != "tire" or m.ok is False:
        return None
    try:
        p, ts = m.params, m.metrics["ts"]
        n, k = int(p["masses"]), int(p["threads"])
        steps = int(m.metrics["steps"].value)
        vals = [float(m.metrics[name].value) for name in ("t_spring", "t_mass", "t_ipc", "t_share")]
        cpus = len({t.get("cpu") for t in m.env.get("solver_threads") or []}) or 1
        e = -(-n // k)                      # the largest share (tire_range)
        mode = str(p.get("mode") or "realtime")
        solver = str(p.get("solver") or "locked")
        # Planned: paced, a thread sleeps once per step until its next period (the
        # locked solver's driver; every thread of the paper's solver), outside Ts.
        slept = 0 if mode == "realfast" else steps * (k if solver == "paper" else 1)
        nsw = int(m.metrics["nivcsw"].value) / steps / cpus
        nwait = max(0, int(m.metrics["nvcsw"].value) - slept) / steps / cpus
        avg = float(ts.avg)
        return CostPoint(n, k, str(p.get("policy") or "?"), mode,
                         None if p.get("period_ms") is None else float(p["period_ms"]),
                         cpus, e, 6 * e + 4, nsw, float(ts.p50 if ts.has("p50") else avg), avg, *vals,
                         ts_p99_ns=None if ts.p99 is None else float(ts.p99), solver=solver, nwait=nwait)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
        return None


def switches(p: CostPoint) -> float:
    """The switches a CPU goes through per step inside Ts: unplanned (Nswitch) and
    the waits (Nwait)."""
    return p.nswitch + p.nwait


def tswitch_in_run(p: CostPoint) -> float | None:
    """Tswitch measured within a run: the step time not spent in the timed
    phases of the CPU's shares, per context switch of that CPU (ns). None when
    the run made no switch."""
    if switches(p) <= 0:
        return None
    r = 1 if p.solver == "paper" else math.ceil(p.threads / p.cpus)
    return (p.ts_median_ns - r * p.share_ns) / switches(p)


def constants(points: list[CostPoint]) -> dict:
    """The constants measured over points: median and the spread (min, max) of
    the per-run values, ns."""
    out = {}
    for name, attr in zip(CONSTANTS, ("t_spring", "t_mass", "t_ipc")):
        v = np.array([getattr(p, attr) for p in points], dtype=float)
        out[name] = {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
                     "runs": len(v)}
    return out


def predict(pt: CostPoint, const: dict, tswitch_ns: float | None) -> float:
    """Ts predicted for pt's configuration from constants measured elsewhere."""
    c = {k: const[k]["median"] for k in CONSTANTS}
    # locked: the driver's Ts is the whole step, r shares in sequence on a CPU; paper:
    # each thread's Ts is its own share from when it runs (waiting for the CPU is Ti)
    r = 1 if pt.solver == "paper" else math.ceil(pt.threads / pt.cpus)
    share = pt.lock_ops * c["Tipc"] + (2 * pt.e + 1) * c["Tspring"] + pt.e * c["Tmass"]
    return r * share + switches(pt) * (tswitch_ns or 0.0)


def tail_factor(points: list[CostPoint]) -> float | None:
    """The median p99/p50 ratio of the step time over points, or None."""
    v = [p.ts_p99_ns / p.ts_median_ns for p in points if p.ts_p99_ns and p.ts_median_ns > 0]
    return float(np.median(v)) if v else None


def tswitch_of(points: list[CostPoint]) -> float | None:
    """Tswitch measured within the runs: the median of tswitch_in_run over the
    runs that switch (more than 0.1 per step and CPU), or None."""
    vals = [v for v in (tswitch_in_run(p) for p in points if switches(p) > 0.1) if v is not None]
    return float(np.median(vals)) if vals else None


def evaluate(train: list[CostPoint], held_out: list[CostPoint], tswitch_micro_ns: float | None = None) -> dict:
    """Constants (and Tswitch) from train, predictions for held_out with their
    relative errors |pred - measured| / measured and the median error. With
    tswitch_micro_ns (the switch microbenchmark), the error the equation makes
    with that Tswitch instead is given beside it."""
    if not train or not held_out:
        return {"constants": None, "predictions": [], "median_error": None}
    const = constants(train)
    tsw = tswitch_of(train)
    tail = tail_factor(train)
    rows = []
    for p in held_out:
        pred = predict(p, const, tsw)
        row = {"masses": p.masses, "threads": p.threads, "policy": p.policy, "solver": p.solver, "e": p.e,
               "nswitch": p.nswitch, "nwait": p.nwait, "measured_ns": p.ts_median_ns, "mean_ns": p.ts_mean_ns,
               "predicted_ns": pred, "error": abs(pred - p.ts_median_ns) / p.ts_median_ns,
               "measured_p99_ns": p.ts_p99_ns, "predicted_p99_ns": None if tail is None else pred * tail}
        row["p99_error"] = (abs(row["predicted_p99_ns"] - p.ts_p99_ns) / p.ts_p99_ns
                            if row["predicted_p99_ns"] is not None and p.ts_p99_ns else None)
        if tswitch_micro_ns is not None:
            row["predicted_micro_ns"] = predict(p, const, tswitch_micro_ns)
        rows.append(row)
    p99 = [r["p99_error"] for r in rows if r["p99_error"] is not None]
    out = {"constants": const, "tswitch_ns": tsw, "tswitch_micro_ns": tswitch_micro_ns, "tail_factor": tail,
           "predictions": rows, "median_error": float(np.median([r["error"] for r in rows])),
           "median_error_p99": float(np.median(p99)) if p99 else None,
           "train": [p.label for p in train]}
    if tswitch_micro_ns is not None:
        out["median_error_micro"] = float(np.median([abs(r["predicted_micro_ns"] - r["measured_ns"])
                                                     / r["measured_ns"] for r in rows]))
    return out


def tswitch_from(measurements) -> float | None:
    """Tswitch (ns): the median of the switch microbenchmark's `switch` among
    the measurements (median over runs of their medians), or None."""
    vals = []
    for m in measurements:
        if m.test == "switch" and m.ok is not False:
            d = m.metric("switch")
            v = d.p50 if d.has("p50") else d.avg
            if isinstance(v, (int, float)):
                vals.append(float(v))
    return float(np.median(vals)) if vals else None


def group_of(p: CostPoint) -> str:
    """The key a point is modelled under: its policy (the locked solver), or
    'policy, SOLVER solver'."""
    return p.policy if p.solver == "locked" else f"{p.policy}, {p.solver} solver"


def leave_one_out(points: list[CostPoint], tswitch_micro_ns: float | None = None) -> dict:
    """Per policy and solver, each configuration predicted from the constants
    measured in all the others (a run or report has no separate training set);
    and, keyed "B from A constants", every run of group B predicted from A's."""
    out = {}
    groups: dict[str, list[CostPoint]] = {}
    for p in points:
        groups.setdefault(group_of(p), []).append(p)
    for key in sorted(groups):
        same = groups[key]
        if len(same) < 2:
            continue
        rows = []
        for i, p in enumerate(same):
            ev = evaluate(same[:i] + same[i + 1:], [p], tswitch_micro_ns)
            rows.extend(ev["predictions"])
        errors = [r["error"] for r in rows]
        p99 = [r["p99_error"] for r in rows if r["p99_error"] is not None]
        out[key] = {"constants": constants(same), "tswitch_ns": tswitch_of(same),
                    "tswitch_micro_ns": tswitch_micro_ns, "tail_factor": tail_factor(same), "predictions": rows,
                    "median_error": float(np.median(errors)),
                    "median_error_p99": float(np.median(p99)) if p99 else None}
    # across groups: one group's constants predict every run of another
    measured = list(out)
    for src in measured:
        for dst in measured:
            if src != dst:
                out[f"{dst} from {src} constants"] = evaluate(groups[src], groups[dst], tswitch_micro_ns)
    return out


def run_cost_model(run: Run) -> dict | None:
    """The cost model of one stored run (its `measurements`): per policy,
    leave-one-out predictions of its tire runs with timed phases; None when it
    has fewer than two."""
    pts = [p for p in map(measured_point, run.measurements) if p]
    return leave_one_out(pts, tswitch_from(run.measurements)) or None
