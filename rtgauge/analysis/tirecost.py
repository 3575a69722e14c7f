"""The published cost equation of the tire model, with its constants measured
directly and tested by prediction (docs/tire.md "Cost equation"):

    Ts = Nswitch·Tswitch + 4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass

The engine's locked solver times its phases on sampled steps, which gives per
run Tspring (one spring force), Tmass (one mass integration) and Tipc (one lock
operation with the copy it guards; the lock term counts the 6e + 4 operations
the solver really makes per thread and step, the published 4·e·Nipc); each
solver thread's context switches per step give Nswitch; Tswitch comes from the
switch microbenchmark (THR-P-SLS). Constants measured on some configurations
predict the step time of the others:

    Ts_pred = r·(ops·Tipc + (2e+1)·Tspring + e·Tmass) + Nswitch·Tswitch

with r = ceil(threads / CPUs) the shares one CPU runs in sequence (threads are
pinned round-robin) and Nswitch the context switches of all solver threads per
step divided by the CPUs used (what one CPU goes through per step). The
measured Ts is the median step time (the mean of a short run is pulled by a
single host stall; both are kept)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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
    nswitch: float           # context switches per step and CPU (all solver threads / cpus)
    ts_median_ns: float
    ts_mean_ns: float
    t_spring: float
    t_mass: float
    t_ipc: float
    share_ns: float          # the slowest share's timed phases per sampled step

    @property
    def label(self) -> str:
        return f"n={self.masses:,}, {self.threads} thr, {self.policy}"


def cost_point(doc: dict) -> CostPoint | None:
    """A point from an engine `tire` document (or a stored measurement) of the
    locked solver with timed phases; None when it has none."""
    try:
        if doc.get("test") != "tire" or not doc.get("ok", True):
            return None
        p, m, cost = doc["params"], doc["metrics"], doc["cost"]
        threads = cost["threads"]
        ts = m["ts"]
        steps = int(m["steps"]["value"])
        vals = [float(m[k]["value"]) for k in ("t_spring", "t_mass", "t_ipc")]
        cpus = len({t.get("cpu") for t in (doc.get("env") or {}).get("solver_threads") or []}) or 1
        big = max(threads, key=lambda t: t["e"])
        # The paced driver sleeps once per step until the next period: that
        # switch is outside Ts and is not counted.
        slept = steps if str(p.get("mode") or "realtime") != "realfast" else 0
        nsw = max(0, sum(t["nvcsw"] + t["nivcsw"] for t in threads) - slept) / steps / cpus
        share = max((t["read_ns"] + t["spring_ns"] + t["mass_ns"] + t["write_ns"]) / t["samples"]
                    for t in threads if t["samples"])
        return CostPoint(int(p["masses"]), int(p["threads"]), str(p.get("policy") or "?"),
                         str(p.get("mode") or "realtime"),
                         None if p.get("period_ms") is None else float(p["period_ms"]),
                         cpus, int(big["e"]), int(big["lock_ops"]), nsw,
                         float(ts.get("p50", ts["avg"])), float(ts["avg"]), *vals, share)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def tswitch_in_run(p: CostPoint) -> float | None:
    """Tswitch measured within a run: the step time not spent in the timed
    phases of the CPU's shares, per context switch of that CPU (ns). None when
    the run made no switch."""
    if p.nswitch <= 0:
        return None
    return (p.ts_median_ns - math.ceil(p.threads / p.cpus) * p.share_ns) / p.nswitch


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
    r = math.ceil(pt.threads / pt.cpus)
    share = pt.lock_ops * c["Tipc"] + (2 * pt.e + 1) * c["Tspring"] + pt.e * c["Tmass"]
    return r * share + pt.nswitch * (tswitch_ns or 0.0)


def evaluate(train: list[CostPoint], held_out: list[CostPoint], tswitch_ns: float | None) -> dict:
    """Constants from train, predictions for held_out with their relative
    errors |pred - measured| / measured, and the median error."""
    if not train:
        return {"constants": None, "predictions": [], "median_error": None, "tswitch_ns": tswitch_ns}
    const = constants(train)
    rows = []
    for p in held_out:
        pred = predict(p, const, tswitch_ns)
        rows.append({"masses": p.masses, "threads": p.threads, "policy": p.policy, "e": p.e,
                     "nswitch": p.nswitch, "measured_ns": p.ts_median_ns, "mean_ns": p.ts_mean_ns,
                     "predicted_ns": pred, "error": abs(pred - p.ts_median_ns) / p.ts_median_ns})
    errors = [r["error"] for r in rows]
    return {"constants": const, "tswitch_ns": tswitch_ns, "predictions": rows,
            "median_error": float(np.median(errors)) if errors else None,
            "train": [p.label for p in train]}


def tswitch_from(measurements: list[dict]) -> float | None:
    """Tswitch (ns): the median of the switch microbenchmark's `switch` among
    the measurements (median over runs of their medians), or None."""
    vals = []
    for m in measurements:
        if m.get("test") == "switch" and m.get("ok", True):
            d = (m.get("metrics") or {}).get("switch") or {}
            v = d.get("p50", d.get("avg"))
            if isinstance(v, (int, float)):
                vals.append(float(v))
    return float(np.median(vals)) if vals else None


def leave_one_out(points: list[CostPoint], tswitch_ns: float | None) -> dict:
    """Each configuration predicted from the constants of all the others (per
    policy), for a run or report that has no separate training set."""
    rows, consts = [], {}
    for policy in sorted({p.policy for p in points}):
        same = [p for p in points if p.policy == policy]
        if len(same) < 2:
            continue
        consts[policy] = constants(same)
        for i, p in enumerate(same):
            ev = evaluate(same[:i] + same[i + 1:], [p], tswitch_ns)
            rows.extend(ev["predictions"])
    by_policy = {}
    for policy in consts:
        errs = [r["error"] for r in rows if r["policy"] == policy]
        by_policy[policy] = float(np.median(errs)) if errs else None
    return {"constants": consts, "tswitch_ns": tswitch_ns, "predictions": rows,
            "median_error": by_policy}


def run_cost_model(run: dict) -> dict | None:
    """The cost model of one stored run (its `measurements`): leave-one-out
    predictions of its tire runs with timed phases; None when it has none."""
    ms = run.get("measurements", [])
    pts = [p for p in (cost_point(m) for m in ms) if p]
    if not pts:
        return None
    return leave_one_out(pts, tswitch_from(ms))
