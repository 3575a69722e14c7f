"""The cycle equation of a periodic measurement, T = Ti + Ts + Tw: the period and its
three parts on average and in the worst case (µs), for the report's budget bars."""

from __future__ import annotations


def equation_parts(m: dict) -> tuple[float, list] | None:
    """(period µs, [("average", [(part, µs)...]), ("worst Ti, Ts", [...])]), or None
    when the measurement lacks Ti, Ts, Tw or a period."""
    metrics = m.get("metrics") or {}
    ti, ts, tw = metrics.get("ti"), metrics.get("ts"), metrics.get("tw")
    params = m.get("params") or {}
    period_us = (params.get("interval_us") or params.get("period_us")
                 or (params.get("period_ms") or 0) * 1000)
    if not (ti and ts and tw and period_us) or ti.get("avg") is None or ts.get("avg") is None:
        return None
    avg = [("Ti", ti["avg"] / 1000), ("Ts", ts["avg"] / 1000), ("Tw", (tw.get("avg") or 0) / 1000)]
    worst = [("Ti", (ti.get("max") or 0) / 1000), ("Ts", (ts.get("max") or 0) / 1000),
             ("Tw", max((tw.get("min") or 0) / 1000, 0))]
    return float(period_us), [("average", avg), ("worst Ti, Ts", worst)]
