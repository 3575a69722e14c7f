"""Analysis of stored runs (the dicts Store.get_run returns): the rows of the
summaries, the headline figures and rating (headline.py), microbenchmarks next to the
published figures (micro.py), the tire sweep (tire.py), system differences
(systems.py) and regressions between runs (regress.py)."""

from __future__ import annotations

from rtgauge.catalogue import LATENCY, catalogue

US = 1000.0


def latency_row(m: dict) -> dict | None:
    """Summary figures (µs) of a periodic measurement, or None when it has no ti."""
    ti = m.get("metrics", {}).get("ti")
    if not ti or ti.get("kind", "distribution") != "distribution" or not ti.get("count"):
        return None
    misses = (m.get("metrics", {}).get("misses") or {}).get("value")
    env = m.get("env") or {}
    return {
        "name": m["name"], "tool": m.get("tool", "engine"), "condition": m.get("condition"),
        "samples": ti["count"], "min_us": _us(ti.get("min")), "avg_us": _us(ti.get("avg")), "stddev_us": _us(ti.get("stddev")),
        "p99_us": _us(ti.get("p99")), "p9999_us": _us(ti.get("p9999")), "max_us": _us(ti.get("max")),
        "misses": misses, "policy": env.get("policy"), "fallback": is_fallback(m),
        "interrupted": bool(m.get("interrupted")),
    }


def is_fallback(m: dict) -> bool:
    """True when the measurement ran without the real-time policy it asked for."""
    env = m.get("env") or {}
    if env.get("fallback"):
        return True
    asked = (m.get("params") or {}).get("policy")
    got = env.get("policy")
    return bool(asked in ("fifo", "rr") and got is not None and got != asked)


def is_latency_measurement(m: dict) -> bool:
    """A wake-up latency job (ours or the cyclictest cross-check), not a tire or
    microbenchmark run that also happens to record Ti."""
    test = m.get("test") or ""
    return test == "" or m.get("tool") == "cyclictest" or catalogue().kind_of(test) == LATENCY


def latency_measurements(run: dict) -> list[dict]:
    return [m for m in run.get("measurements", []) if is_latency_measurement(m) and latency_row(m)]


def _us(ns):
    return None if ns is None else ns / US


def cross_checks(measurements: list[dict]) -> list[dict]:
    """Pair each engine latency measurement with the cyclictest one of the same job and
    condition: the ratio engine/cyclictest of avg, p99 and max."""
    rows = {m["name"]: latency_row(m) for m in measurements if is_latency_measurement(m)}
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


def system_label(run: dict) -> str:
    """A short name for a run's system in column headers: host, kernel, run id."""
    s = run.get("system") or {}
    host = s.get("hostname") or run.get("hostname") or "?"
    kernel = s.get("kernel_release") or run.get("kernel_release") or "?"
    return f"{host} {kernel} (run {run.get('id')})"
