"""The cycle equation of a periodic measurement, T = Ti + Ts + Tw: the period and its
three parts on average and in the worst case (µs), for the report's budget bars."""

from __future__ import annotations

from rtgauge.records import Measurement


def equation_parts(m: Measurement) -> tuple[float, list] | None:
    """(period µs, [("average", [(part, µs)...]), ("worst Ti, Ts", [...])]), or None
    when the measurement lacks Ti, Ts, Tw or a period."""
    ti, ts, tw = (m.metrics.get(k) for k in ("ti", "ts", "tw"))
    period_us = m.period_us
    if not (ti and ts and tw and period_us) or ti.avg is None or ts.avg is None:
        return None
    avg = [("Ti", ti.avg / 1000), ("Ts", ts.avg / 1000), ("Tw", (tw.avg or 0) / 1000)]
    worst = [("Ti", (ti.max or 0) / 1000), ("Ts", (ts.max or 0) / 1000), ("Tw", max((tw.min or 0) / 1000, 0))]
    return float(period_us), [("average", avg), ("worst Ti, Ts", worst)]
