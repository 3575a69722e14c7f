"""Hand-made runs shaped like the engine's JSON contract (docs/engine.md) for the
report, compare and export tests: latency per CPU with log-linear bins, a
cyclictest cross-check with 1 µs bins, microbenchmarks with verdicts, a tire sweep
over masses × threads × policy with misses, real-fast wall times and cost terms.
The tests at the end check that the builders' documents survive the store."""

from __future__ import annotations

import math
import random

from rtgauge.store import open_store

HOSTILE = "<script>alert('x')</script>&<b>"
SYSTEM = {
    "hostname": "rig-1", "machine_id": "0f3c", "kernel_release": "6.1.0-27-rt-amd64",
    "kernel_version": "#1 SMP PREEMPT_RT Debian 6.1.115-1", "arch": "x86_64",
    "cpu_model": "Intel(R) Xeon(R) CPU E5-2680 v4", "cpus": 2, "physical_cores": 2, "preempt_model": "PREEMPT_RT",
    "realtime": True, "cmdline": "BOOT_IMAGE=/vmlinuz quiet", "clocksource": {"current": "tsc"},
    "isolcpus": [], "nohz_full": [], "tuned_profile": None, "rt_runtime_us": 950000, "rt_period_us": 1000000,
}
DOCTOR = [{"name": "privileges", "status": "ok", "value": "root", "advice": ""},
          {"name": "smt", "status": "warn", "value": "on", "advice": "turn SMT off"}]


def log_linear_bins(values: list[int]) -> list[list[int]]:
    """Bins like the engine's (128 sub-buckets per power of two, [lo, hi, count])."""
    counts: dict[tuple[int, int], int] = {}
    for v in values:
        if v < 128:
            lo = hi = v
        else:
            shift = int(math.log2(v)) - 7
            lo = (v >> shift) << shift
            hi = lo + (1 << shift) - 1
        counts[(lo, hi)] = counts.get((lo, hi), 0) + 1
    return [[lo, hi, c] for (lo, hi), c in sorted(counts.items())]


def linear_bins(values: list[int], width: int = 1000) -> list[list[int]]:
    counts: dict[int, int] = {}
    for v in values:
        counts[v // width] = counts.get(v // width, 0) + 1
    return [[k * width, k * width + width - 1, c] for k, c in sorted(counts.items())]


def distribution(values: list[int], bins=log_linear_bins) -> dict:
    s = sorted(values)
    n = len(s)
    avg = sum(s) / n

    def pct(p):
        return s[min(n - 1, int(p * n))]
    return {"unit": "ns", "count": n, "min": s[0], "avg": avg,
            "stddev": (sum((v - avg) ** 2 for v in s) / n) ** 0.5, "p50": pct(0.5), "p90": pct(0.9),
            "p99": pct(0.99), "p999": pct(0.999), "p9999": pct(0.9999), "max": s[-1],
            "histogram": {"scheme": "log-linear" if bins is log_linear_bins else "linear", "sub_buckets": 128,
                          "bins": bins(values)}}


def latency_samples(seed: int, n: int, median_ns: float, spike_ns: int | None) -> list[int]:
    rnd = random.Random(seed)
    vals = [int(median_ns * math.exp(rnd.gauss(0, 0.35))) for _ in range(n)]
    if spike_ns:
        vals[n // 2] = spike_ns
    return vals


def latency_document(cpus: int = 2, median_ns: float = 8000, spike_ns: int | None = 40000, misses: int = 0,
                     fallback: bool = False, seed: int = 1, n: int = 3000, interval_us: int = 1000,
                     hostname: str = "rig-1") -> dict:
    metrics, threads, all_vals = {}, [], []
    per_thread = []
    for i in range(cpus):
        vals = latency_samples(seed * 100 + i, n, median_ns * (1 + 0.2 * i), spike_ns if i == 0 else None)
        per_thread.append(vals)
        all_vals += vals
        threads.append({"index": i, "cpu": i, "tid": 4000 + i, "policy": "other" if fallback else "fifo",
                        "priority": 0 if fallback else 80, "fallback": fallback, "nvcsw": n, "nivcsw": 0})
    ts = [40 + (v % 30) for v in all_vals]
    tw = [interval_us * 1000 - v - 50 for v in all_vals]
    metrics["ti"] = distribution(all_vals)
    metrics["ts"] = distribution(ts)
    metrics["tw"] = distribution(tw)
    metrics["misses"] = {"unit": "count", "value": misses}
    metrics["cycles"] = {"unit": "count", "value": n * cpus}
    metrics["ti_window_max"] = {"unit": "ns", "window_ns": 1_000_000_000, "start_ns": 1,
                                "max": [max(all_vals[k::5]) for k in range(5)]}
    for i, vals in enumerate(per_thread):
        metrics[f"ti#{i}"] = distribution(vals)
        metrics[f"ti_window_max#{i}"] = {"unit": "ns", "window_ns": 1_000_000_000, "start_ns": 1,
                                         "max": [max(vals[k::5]) for k in range(5)]}
    return {"schema": 1, "test": "latency", "ok": True, "interrupted": False,
            "params": {"interval_us": interval_us, "duration_s": 3, "policy": "fifo", "priority": 80,
                       "allow_fallback": fallback},
            "env": {"policy": "other" if fallback else "fifo", "priority": 0 if fallback else 80,
                    "fallback": fallback, "cpus": list(range(cpus)), "hostname": hostname,
                    "kernel": SYSTEM["kernel_release"], "kernel_version": SYSTEM["kernel_version"],
                    "machine": "x86_64", "preempt_model": "PREEMPT_RT", "online_cpus": cpus, "threads": threads,
                    "run_start_ns": 1_000_000_000, "run_end_ns": 4_000_000_000},
            "metrics": metrics, "verdicts": {}}


def cyclictest_document(cpus: int = 2, median_ns: float = 8000, seed: int = 1, n: int = 3000) -> dict:
    metrics = {}
    allv = []
    for i in range(cpus):
        vals = [v // 1000 * 1000 for v in latency_samples(seed * 100 + i, n, median_ns * (1 + 0.2 * i), None)]
        allv += vals
        metrics[f"ti#{i}"] = distribution(vals, bins=linear_bins)
    metrics["ti"] = distribution(allv, bins=linear_bins)
    return {"schema": 1, "test": "latency", "tool": "cyclictest", "ok": True, "interrupted": False,
            "params": {"interval_us": 1000, "duration_s": 3.0, "policy": "fifo", "priority": 80},
            "env": {"policy": "fifo", "priority": 80, "cpus": list(range(cpus)), "resolution_ns": 1000},
            "metrics": metrics, "verdicts": {}}


def micro_document(test: str, metrics: dict[str, float], params: dict | None = None,
                   verdicts: dict | None = None, seed: int = 3) -> dict:
    rnd = random.Random(seed)
    out = {}
    for name, median in metrics.items():
        vals = [max(1, int(median * math.exp(rnd.gauss(0, 0.2)))) for _ in range(500)]
        vals[7] = int(median * 12)
        out[name] = distribution(vals)
    return {"schema": 1, "test": test, "ok": True, "interrupted": False, "params": params or {},
            "env": {"policy": "fifo", "priority": 80, "fallback": False, "cpus": [0]},
            "metrics": out, "verdicts": verdicts or {}}


def tire_document(masses: int, threads: int, policy: str, mode: str = "realtime", ns_per_mass: float = 200.0,
                  period_ms: float = 10.0, steps: int = 200, solver: str = "locked") -> dict:
    """A tire run whose step takes ns_per_mass·n/threads; a step longer than the period misses."""
    step_ns = ns_per_mass * masses / threads * (1.3 if policy == "other" else 1.0)
    misses = 0
    if mode == "realtime":
        over = step_ns / (period_ms * 1e6)
        misses = 0 if over < 0.8 else int(min(steps, steps * (over - 0.7)))
    ts = [int(step_ns * (1 + 0.01 * (k % 7))) for k in range(steps)]
    doc = {"schema": 1, "test": "tire", "ok": True, "interrupted": False,
           "params": {"masses": masses, "threads": threads, "solver": solver, "mode": mode, "period_ms": period_ms,
                      "steps": steps, "policy": policy, "step_s": 0.01},
           "env": {"policy": policy, "priority": 80 if policy == "fifo" else 0, "fallback": False},
           "metrics": {"misses": {"unit": "count", "value": misses}, "steps": {"unit": "count", "value": steps},
                       "ts": distribution(ts)},
           "verdicts": {}}
    if mode == "realfast":
        doc["metrics"]["wall_s"] = {"unit": "s", "value": step_ns * 6000 / 1e9}
        doc["metrics"].pop("misses")
    else:
        doc["metrics"]["ti"] = distribution([5000 + k for k in range(steps)])
        doc["metrics"]["tw"] = distribution([int(period_ms * 1e6 - t - 5000) for t in ts])
    return doc


def job(name: str, test: str, condition: str = "idle", tool: str = "engine") -> dict:
    return {"name": name, "tool": tool, "test": test, "condition": condition, "reference": tool != "engine",
            "load": {"condition": condition}, "started_at": "2025-11-22T02:06:00+00:00", "duration_s": 3.0,
            "exit_status": 0, "command": ["rtgauge-engine", test]}


RATED_N = 10_000   # samples per CPU (2 CPUs): 20,000 cycles a job, long enough to be rated


def full_run_documents(scale: float = 1.0, misses: int = 0, fallback: bool = False,
                       tire_cost: float = 200.0, pi_spin_pass: bool = False, hostname: str = "rig-1",
                       n: int = 3000) -> list[tuple[dict, dict]]:
    """(job, document) pairs of a complete run; scale multiplies every latency; n samples
    per CPU in each latency job (RATED_N for a run long enough to be rated)."""
    docs = [
        (job("latency@idle", "latency"), latency_document(median_ns=8000 * scale, spike_ns=int(40000 * scale),
                                                          fallback=fallback, hostname=hostname, n=n)),
        (job("latency@idle/cyclictest", "latency", tool="cyclictest"), cyclictest_document(median_ns=8000 * scale,
                                                                                           n=n)),
        (job("latency@cpu", "latency", "cpu"), latency_document(median_ns=6000 * scale, spike_ns=int(60000 * scale),
                                                                misses=misses, fallback=fallback, seed=2,
                                                                hostname=hostname, n=n)),
        (job("switch@idle", "switch"), micro_document("switch", {"switch": 1500 * scale}, {"threads": 2})),
        (job("switch-128@idle", "switch"), micro_document("switch", {"switch": 2500 * scale}, {"threads": 128})),
        (job("preempt@idle", "preempt"), micro_document("preempt", {"preempt": 2000 * scale})),
        (job("sem@idle", "sem"), micro_document("sem", {"acquire": 60 * scale, "release": 70 * scale,
                                                        "acquire_contended": 9000 * scale})),
        (job("pi-mutex@idle", "pi"), micro_document("pi", {}, {"primitive": "pi-mutex"},
                                                    {"priority_inversion": {"pass": True, "detail": "protected"}})),
        (job("pi-spin@idle", "pi"), micro_document("pi", {}, {"primitive": "spin"},
                                                   {"priority_inversion": {"pass": pi_spin_pass,
                                                                           "detail": "high waited 100 ms"}})),
    ]
    for policy in ("other", "fifo"):
        for threads in (1, 2, 4):
            for masses in (4000, 16000, 64000, 256000):
                docs.append((job(f"tire-{policy}-{threads}-{masses}", "tire"),
                             tire_document(masses, threads, policy, ns_per_mass=tire_cost)))
        for threads in (1, 2):
            for masses in (4000, 64000, 1024000):
                docs.append((job(f"tire-fast-{policy}-{threads}-{masses}", "tire"),
                             tire_document(masses, threads, policy, "realfast", ns_per_mass=tire_cost)))
    docs.append((job("tire-fit", "tire-fit"), {
        "schema": 1, "test": "tire-fit", "ok": True, "params": {}, "env": {},
        "metrics": {"t_mass": {"unit": "ns", "value": 85.0}, "t_spring": {"unit": "ns", "value": 390.0},
                    "t_ipc": {"unit": "ns", "value": 55.0}, "residual": {"unit": "ratio", "value": 0.04}},
        "verdicts": {}}))
    return docs


def store_run(url: str, docs: list[tuple[dict, dict]], system: dict | None = None, doctor=None,
              status: str = "complete") -> int:
    with open_store(url) as store:
        run_id = store.begin_run(system or SYSTEM, DOCTOR if doctor is None else doctor, "standard",
                                 "builtin:standard", ["rtgauge", "run"])
        for j, d in docs:
            store.add_measurement(run_id, j, d)
        store.finish_run(run_id, status, "")
        return run_id


def test_builders_round_trip_through_the_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    docs = full_run_documents()
    run_id = store_run(url, docs)
    with open_store(url) as store:
        run = store.get_run(run_id).to_dict()
    assert len(run["measurements"]) == len(docs)
    lat = run["measurements"][0]
    assert lat["metrics"]["ti"]["count"] == sum(b[2] for b in lat["metrics"]["ti"]["histogram"]["bins"])
    assert lat["metrics"]["ti#0"]["max"] == 40000


def test_tire_builder_misses_grow_with_masses_and_shrink_with_threads():
    miss = {(n, t): tire_document(n, t, "fifo")["metrics"]["misses"]["value"]
            for n in (4000, 64000, 256000) for t in (1, 4)}
    assert miss[(4000, 1)] == 0 and miss[(256000, 1)] > 0
    assert miss[(256000, 4)] <= miss[(256000, 1)]
