"""Analysis of stored measurements: the rows of the summary, and the comparison of
our latency figures with cyclictest's on the same condition."""

from __future__ import annotations

US = 1000.0


def latency_row(m: dict) -> dict | None:
    """Summary figures (µs) of a periodic measurement, or None when it has no ti."""
    ti = m.get("metrics", {}).get("ti")
    if not ti or ti.get("kind", "distribution") != "distribution" or not ti.get("count"):
        return None
    misses = m.get("metrics", {}).get("misses", {}).get("value")
    env = m.get("env") or {}
    return {
        "name": m["name"], "tool": m.get("tool", "engine"), "condition": m.get("condition"),
        "samples": ti["count"], "min_us": _us(ti.get("min")), "avg_us": _us(ti.get("avg")),
        "p99_us": _us(ti.get("p99")), "p9999_us": _us(ti.get("p9999")), "max_us": _us(ti.get("max")),
        "misses": misses, "policy": env.get("policy"), "fallback": bool(env.get("fallback")),
        "interrupted": bool(m.get("interrupted")),
    }


def _us(ns):
    return None if ns is None else ns / US


def cross_checks(measurements: list[dict]) -> list[dict]:
    """Pair each engine latency measurement with the cyclictest one of the same job and
    condition: the ratio engine/cyclictest of avg, p99 and max."""
    rows = {m["name"]: latency_row(m) for m in measurements}
    out = []
    for name, row in rows.items():
        ref = rows.get(f"{name}/cyclictest")
        if row is None or ref is None or row["tool"] != "engine":
            continue
        pair = {"name": name, "condition": row["condition"]}
        for k in ("avg_us", "p99_us", "max_us"):
            a, b = row[k], ref[k]
            pair[k] = (a, b, (a / b) if a is not None and b else None)
        out.append(pair)
    return out


def scalar(m: dict, name: str):
    metric = m.get("metrics", {}).get(name)
    return None if metric is None else metric.get("value")
