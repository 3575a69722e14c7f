"""cyclictest (rt-tests) as a cross-check of the same condition.

cyclictest reports wake-up latency in whole microseconds: its per-thread histogram
(-h LIMIT, 1 µs buckets, values >= LIMIT counted as overflows), min, avg and max. We
turn that into the contract's distribution; percentiles come from the 1 µs buckets
(so their resolution is 1 µs), and a percentile that falls among the overflows is
reported as the exact max, an upper bound (flagged in the metric)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

from rtgauge.errors import UserError

PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999))
US = 1000


def cyclictest_path() -> str | None:
    return shutil.which("cyclictest")


def command(options: dict, cpus: list[int], json_path: str, exe: str | None = None) -> list[str]:
    """The cyclictest command equivalent to an engine latency job's options (exe: the
    program to run, default the one installed here)."""
    exe = exe or cyclictest_path()
    if not exe:
        raise UserError("cyclictest is not installed; install it with `apt-get install rt-tests`.")
    interval = int(options.get("interval-us", 1000))
    duration = float(options.get("duration-s", 10))
    policy = str(options.get("policy", "fifo"))
    prio = int(options.get("priority", 80)) if policy != "other" else 0
    hist = int(options.get("histogram", 20000))
    return [exe, "--mlockall", "--quiet", f"--priority={prio}", f"--policy={policy}",
            f"--interval={interval}", f"--duration={max(1, math.ceil(duration))}",
            f"--affinity={','.join(map(str, cpus))}", f"--threads={len(cpus)}",
            f"--histogram={hist}", f"--json={json_path}"]


def to_document(raw: dict, options: dict, cpus: list[int], status: int, interrupted: bool) -> dict:
    """cyclictest's --json output as an engine-contract document."""
    threads = raw.get("thread", {})
    hist_limit_us = int(options.get("histogram", 20000))
    metrics: dict = {}
    merged_counts: dict[int, int] = {}
    merged = {"cycles": 0, "overflow": 0, "min": None, "max": None, "sum_us": 0.0}
    env_threads = []
    for key in sorted(threads, key=int):
        t = threads[key]
        counts = {int(k): int(v) for k, v in t.get("histogram", {}).items()}
        cycles = int(t.get("cycles", 0))
        overflow = max(0, cycles - sum(counts.values()))
        dist = distribution(counts, cycles, overflow, t.get("min"), t.get("avg"), t.get("max"),
                            hist_limit_us)
        metrics[f"ti#{key}"] = dist
        metrics[f"cycles#{key}"] = {"unit": "count", "value": cycles}
        env_threads.append({"index": int(key), "cpu": t.get("cpu")})
        for b, c in counts.items():
            merged_counts[b] = merged_counts.get(b, 0) + c
        merged["cycles"] += cycles
        merged["overflow"] += overflow
        merged["sum_us"] += float(t.get("avg", 0)) * cycles
        if t.get("min") is not None:
            merged["min"] = t["min"] if merged["min"] is None else min(merged["min"], t["min"])
        if t.get("max") is not None:
            merged["max"] = t["max"] if merged["max"] is None else max(merged["max"], t["max"])
    if merged["cycles"]:
        avg = merged["sum_us"] / merged["cycles"]
        metrics["ti"] = distribution(merged_counts, merged["cycles"], merged["overflow"],
                                     merged["min"], avg, merged["max"], hist_limit_us)
    metrics["cycles"] = {"unit": "count", "value": merged["cycles"]}
    ok = status == 0 or interrupted
    doc = {
        "schema": 1, "test": "latency", "tool": "cyclictest", "ok": ok and bool(merged["cycles"]),
        "interrupted": interrupted,
        "params": {"interval_us": int(options.get("interval-us", 1000)),
                   "duration_s": float(options.get("duration-s", 10)),
                   "policy": str(options.get("policy", "fifo")),
                   "priority": int(options.get("priority", 80)), "cpus": cpus,
                   "histogram": hist_limit_us},
        "env": {"tool_version": raw.get("rt_test_version:") or raw.get("rt_test_version"),
                "cmdline": raw.get("cmdline:") or raw.get("cmdline"),
                "resolution_ns": US, "threads": env_threads,
                "policy": str(options.get("policy", "fifo")),
                "priority": int(options.get("priority", 80)), "cpus": cpus},
        "metrics": metrics, "verdicts": {},
    }
    if not doc["ok"]:
        doc["error"] = f"cyclictest exited with status {status} and measured {merged['cycles']} cycles"
    return doc


def distribution(counts: dict[int, int], cycles: int, overflow: int, vmin, vavg, vmax,
                 limit_us: int) -> dict:
    """Contract distribution (ns) from 1 µs buckets plus overflows beyond limit_us."""
    total = sum(counts.values())
    mean_in = sum((b + 0.5) * c for b, c in counts.items()) / total if total else 0.0
    var_in = sum(c * ((b + 0.5) - mean_in) ** 2 for b, c in counts.items()) / total if total else 0.0
    stats = {"unit": "ns", "count": cycles,
             "min": int(vmin) * US if vmin is not None else None,
             "avg": float(vavg) * US if vavg is not None else None,
             "stddev": math.sqrt(var_in) * US,
             "max": int(vmax) * US if vmax is not None else None,
             "resolution_ns": US}
    bounded = []
    for name, q in PERCENTILES:
        v, is_bound = _percentile_us(counts, overflow, cycles, q, vmax)
        stats[name] = v * US if v is not None else None
        if is_bound:
            bounded.append(name)
    if bounded:
        stats["upper_bounds"] = bounded
    stats["histogram"] = {"scheme": "linear", "bucket_ns": US,
                          "bins": [[b * US, (b + 1) * US - 1, c] for b, c in sorted(counts.items()) if c]}
    if overflow:
        stats["histogram"]["overflow"] = overflow
        stats["histogram"]["overflow_from_ns"] = limit_us * US
    return stats


def _percentile_us(counts: dict[int, int], overflow: int, cycles: int, q: float, vmax):
    """Nearest-rank percentile: the bucket holding the ceil(q*n)-th value."""
    if cycles <= 0:
        return None, False
    rank = max(1, math.ceil(q * cycles))
    seen = 0
    for b in sorted(counts):
        seen += counts[b]
        if seen >= rank:
            return b, False
    return (int(vmax) if vmax is not None else None), True


def run(options: dict, cpus: list[int], json_path: str, popen_kwargs: dict) -> subprocess.Popen:
    return subprocess.Popen(command(options, cpus, json_path), **popen_kwargs)


def load_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)
