"""The trend of each system over time (`rtgauge report --trend`): per system (host,
or the target it measured) and condition, per run in order of its start time, the
worst wake-up latency (max), the p99 and the credible worst case (docs/pwcet.md, where
its checks pass), and the changes from one run to the next that are statistically
significant (the statistics of `rtgauge compare`, rtgauge/analysis/compare/regress.py)."""

from __future__ import annotations

from datetime import datetime

from rtgauge.analysis.run.rows import latency_measurements
from rtgauge.records import Run
from rtgauge.analysis.compare.regress import BETTER, WORSE, compare_runs
from rtgauge.analysis.run.verdict import worst_case

FAMILIES = {"max_latency": "max", "p99_latency": "p99"}


def system_key(run: Run) -> str:
    s = run.system
    return str(s.get("target") or s.get("hostname") or "?")


def started(run: Run) -> datetime | None:
    try:
        return datetime.fromisoformat(str(run.started_at).replace("Z", "+00:00"))
    except ValueError:
        return None


def run_points(run: Run) -> dict[str, dict]:
    """condition -> {max_us, p99_us, pwcet_us, pwcet_why} over the run's engine jobs."""
    out: dict[str, dict] = {}
    for m in latency_measurements(run):
        if m.tool != "engine" or not m.ok:
            continue
        ti = m.metric("ti")
        p = out.setdefault(m.condition or "?", {"max_us": None, "p99_us": None, "pwcet_us": None, "pwcet_why": None})
        if ti.max is not None:
            p["max_us"] = max(p["max_us"] or 0, ti.max / 1000)
        if ti.p99 is not None:
            p["p99_us"] = max(p["p99_us"] or 0, ti.p99 / 1000)
        wc = worst_case(m)
        if wc["credible"]:
            p["pwcet_us"] = max(p["pwcet_us"] or 0, wc["level_us"])
        else:
            p["pwcet_why"] = wc["why"]
    return out


def trend(runs: list[Run]) -> list[dict]:
    """[{system, condition, points: [{run, started_at, max_us, p99_us, pwcet_us, changes}]}]
    for every system and condition measured by two or more runs, oldest first; a
    point's changes are the significant ones from the run before it."""
    by_system: dict[str, list[Run]] = {}
    for r in runs:
        by_system.setdefault(system_key(r), []).append(r)
    out = []
    for system, rs in by_system.items():
        rs = sorted(rs, key=lambda r: (started(r) is None, started(r) or datetime.min, r.id or 0))
        if len(rs) < 2:
            continue
        points = [(r, run_points(r)) for r in rs]
        changes: dict[int, list] = {}
        for prev, cur in zip(rs, rs[1:]):
            changes[cur.id] = [c for c in compare_runs(prev, cur)
                               if c.figure.family in FAMILIES and c.call in (WORSE, BETTER)]
        conditions: list[str] = []
        for _, pts in points:
            conditions += [c for c in pts if c not in conditions]
        for cond in conditions:
            series = []
            for r, pts in points:
                if cond not in pts:
                    continue
                names = {m.pooled_name for m in latency_measurements(r) if m.condition == cond}
                mine = [{"figure": FAMILIES[c.figure.family], "call": c.call, "label": c.figure.label,
                         "base": c.base, "value": c.value}
                        for c in changes.get(r.id, []) if any(c.figure.label.startswith(n + " ") for n in names)
                        and "/cyclictest" not in c.figure.label]
                series.append({"run": r.id, "started_at": r.started_at, **pts[cond], "changes": mine})
            if len(series) >= 2:
                out.append({"system": system, "condition": cond, "points": series})
    return out
