"""Least-squares fit of the published per-thread step cost

    Ts = Nswitch·Tswitch + 4·e·Nipc·Tipc + (2e+1)·Tspring + e·Tmass

to tire runs. Per run and thread: e = floor(n / threads) masses; the lock term
uses the lock operations the locked solver really makes per thread and step
(6e + 4: a lock and an unlock for each node read, opposite node read and node
written), so the coefficient is Tipc per operation; Nswitch is the solver
threads' involuntary context switches per thread and step (getrusage). Ts is
the mean parallel step. The (2e+1) and e columns are nearly collinear, so
Tspring and Tmass are only separable through the constant term; the fit says
so in `condition`. Pure Python: four unknowns need no numerical library."""

from __future__ import annotations

import math

TERMS = ("Tswitch", "Tipc", "Tspring", "Tmass")


def point_from_doc(doc: dict) -> dict | None:
    """One observation from an engine `tire` document, or None when unusable."""
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
    return {"e": e, "ts_ns": ts, "lock_ops": ops, "nswitch": nsw, "threads": k, "masses": n}


def _row(pt: dict) -> list[float]:
    return [pt["nswitch"], pt["lock_ops"], 2 * pt["e"] + 1, pt["e"]]


def _lstsq(x: list[list[float]], y: list[float]) -> tuple[list[float], float] | None:
    """Least squares by QR (modified Gram-Schmidt, twice for stability): the
    columns here are nearly collinear, which normal equations would square.
    Returns the solution and the ratio of the largest to the smallest diagonal
    of R (a collinearity warning), or None when a column is dependent."""
    m, n = len(x), len(x[0])
    q = [[x[i][j] for i in range(m)] for j in range(n)]      # columns
    r = [[0.0] * n for _ in range(n)]
    for j in range(n):
        for _ in range(2):
            for k in range(j):
                d = sum(q[k][i] * q[j][i] for i in range(m))
                r[k][j] += d
                q[j] = [q[j][i] - d * q[k][i] for i in range(m)]
        norm = math.sqrt(sum(v * v for v in q[j]))
        if norm < 1e-12:
            return None
        r[j][j] = norm
        q[j] = [v / norm for v in q[j]]
    qty = [sum(q[j][i] * y[i] for i in range(m)) for j in range(n)]
    sol = [0.0] * n
    for j in range(n - 1, -1, -1):
        sol[j] = (qty[j] - sum(r[j][k] * sol[k] for k in range(j + 1, n))) / r[j][j]
    diag = [abs(r[j][j]) for j in range(n)]
    return sol, max(diag) / min(diag)


def fit_cost(points: list[dict]) -> dict | None:
    """Fit the terms that the data can determine (a term whose column is all zero,
    e.g. Tipc without locked runs, is reported as None). Columns are scaled to
    unit norm before solving."""
    if not points:
        return None
    rows = [_row(p) for p in points]
    y = [p["ts_ns"] for p in points]
    cols = [j for j in range(4) if any(abs(r[j]) > 0 for r in rows)]
    if len(points) < len(cols):
        return None
    scale = [math.sqrt(sum(r[j] ** 2 for r in rows)) for j in cols]
    x = [[r[j] / s for j, s in zip(cols, scale)] for r in rows]
    solved = _lstsq(x, y)
    if solved is None:
        return None
    sol, condition = solved
    terms: dict[str, float | None] = {t: None for t in TERMS}
    for j, s, v in zip(cols, scale, sol):
        terms[TERMS[j]] = v / s
    pred = [sum((terms[TERMS[j]] or 0.0) * r[j] for j in range(4)) for r in rows]
    res = [yi - pi for yi, pi in zip(y, pred)]
    rms = math.sqrt(sum(r * r for r in res) / len(res))
    return {"terms_ns": terms, "residual_rms_ns": rms,
            "relative_residual": rms / (sum(y) / len(y)), "points": len(points),
            "condition": condition}
