"""The published per-thread step cost

    Ts = Nswitch·Tswitch + 4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass

for the sweep's probes. Its constants are measured, not fitted, wherever the
probes carry the locked solver's timed phases (rtgauge.analysis.studies.tirecost,
docs/tire.md "Cost equation"): Tspring, Tmass, Tipc from the phases, Tswitch
from the step time outside them per context switch.

A least-squares fit (numpy.linalg.lstsq) remains only for probes without timed
phases, and only where it can identify the constants: for the locked solver
alone the lock column is exactly 6e + 4 = 4·(2e+1) - 2·e, a combination of the
spring and mass columns, so the columns are collinear and the fit reports nothing rather than numbers the data cannot
determine. Per run and thread: e = floor(n / threads); the lock term uses the
6e + 4 lock operations the locked solver makes per thread and step (Tipc per
operation); Nswitch is the solver threads' involuntary context switches per
thread and step."""

from __future__ import annotations

import math

import numpy as np

from rtgauge.analysis.studies import tirecost

TERMS = ("Tswitch", "Tipc", "Tspring", "Tmass")


def point_from_doc(doc: dict) -> dict | None:
    """One observation from an engine `tire` document, or None when unusable.
    With timed phases, `measured` holds the run's tirecost.CostPoint."""
    try:
        p, m = doc["params"], doc["metrics"]
        n, k = int(p["masses"]), int(p["threads"])
        steps = int(m["steps"]["value"])
        ts = float(m["ts"]["avg"])
    except (KeyError, TypeError, ValueError):
        return None
    if steps <= 0 or k <= 0 or not math.isfinite(ts):
        return None
    e = n // k
    ops = m.get("lock_ops_per_step", {}).get("value", 0) / k
    nsw = m.get("nivcsw", {}).get("value", 0) / (k * steps)
    return {"e": e, "ts_ns": ts, "lock_ops": ops, "nswitch": nsw, "threads": k, "masses": n,
            "measured": tirecost.cost_point(doc)}


def _row(pt: dict) -> list[float]:
    return [pt["nswitch"], pt["lock_ops"], 2 * pt["e"] + 1, pt["e"]]


def _measured(points: list[dict]) -> dict:
    """The constants measured by the solver, and how well they give back each
    probe's median step time."""
    pts = [p["measured"] for p in points]
    const = tirecost.constants(pts)
    tsw = tirecost.tswitch_of(pts)
    terms = {"Tswitch": tsw, "Tipc": const["Tipc"]["median"], "Tspring": const["Tspring"]["median"],
             "Tmass": const["Tmass"]["median"]}
    res = np.array([tirecost.predict(p, const, tsw) - p.ts_median_ns for p in pts])
    y = np.array([p.ts_median_ns for p in pts])
    rms = float(np.sqrt(np.mean(res ** 2)))
    return {"method": "measured", "identifiable": True, "terms_ns": terms, "residual_rms_ns": rms,
            "relative_residual": rms / float(y.mean()), "points": len(pts), "condition": None}


def fit_cost(points: list[dict]) -> dict | None:
    """The cost constants of the probes: measured (when every probe has timed
    phases), else fitted by least squares over the terms whose column is not
    all zero. When those columns are linearly dependent the constants cannot be
    identified: `identifiable` is False and every term None."""
    if not points:
        return None
    if all(p.get("measured") for p in points):
        return _measured(points)
    rows = np.array([_row(p) for p in points], dtype=float)
    y = np.array([p["ts_ns"] for p in points], dtype=float)
    cols = [j for j in range(4) if np.any(rows[:, j] != 0)]
    if len(points) < len(cols):
        return None
    x = rows[:, cols]
    scale = np.linalg.norm(x, axis=0)
    sol, _, rank, sv = np.linalg.lstsq(x / scale, y, rcond=None)
    terms: dict[str, float | None] = {t: None for t in TERMS}
    condition = float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf
    if rank < len(cols):
        return {"method": "least squares", "identifiable": False, "terms_ns": terms, "residual_rms_ns": None,
                "relative_residual": None, "points": len(points), "condition": condition}
    for j, s, v in zip(cols, scale, sol):
        terms[TERMS[j]] = float(v / s)
    pred = rows @ np.array([terms[t] or 0.0 for t in TERMS])
    rms = float(np.sqrt(np.mean((y - pred) ** 2)))
    return {"method": "least squares", "identifiable": True, "terms_ns": terms, "residual_rms_ns": rms,
            "relative_residual": rms / float(y.mean()), "points": len(points), "condition": condition}
