"""Sweep of the tire model: per thread count and policy, the largest number of
masses that holds hard real-time (zero late steps) at the period, found on a
geometric grid and refined by bisection. A probe is one engine run in realtime
mode with --stop-on-miss, so a failing probe ends at its first late step.

Assumes that holding is monotone in n (a bigger tire never costs less per step);
noise can break that locally, so the answer is "the largest n seen to hold with
every smaller probe above it failing", not a proof."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Callable

from rtgauge.catalogue import catalogue, within
from rtgauge.errors import UserError


def published_thread_counts() -> list[int]:
    """1, one per physical core, one per logical CPU, two per logical CPU (docs/method.md)."""
    logical = len(os.sched_getaffinity(0))
    cores = physical_cores() or logical
    return sorted({1, min(cores, logical), logical, 2 * logical})


def physical_cores() -> int | None:
    """Distinct (package, core) pairs among the allowed CPUs, from sysfs."""
    seen = set()
    for cpu in os.sched_getaffinity(0):
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        try:
            with open(f"{base}/physical_package_id") as f:
                pkg = f.read().strip()
            with open(f"{base}/core_id") as f:
                core = f.read().strip()
        except OSError:
            return None
        seen.add((pkg, core))
    return len(seen) or None


@dataclass
class SweepSpec:
    masses_min: int = 1000
    masses_max: int = 4_000_000
    grid_ratio: float = 2.0          # geometric grid before the bisection
    precision: float = 0.05          # stop when hi/lo - 1 is below this
    threads: list[int] = field(default_factory=published_thread_counts)
    policies: list[str] = field(default_factory=lambda: ["other", "fifo"])
    solver: str = "locked"
    lock: str = "mutex"
    period_ms: float = 10.0
    steps: int = 500                 # per probe: 5 s at 100 Hz
    cpus: str | None = None
    retries: int = 1                 # a probe is late only when late this many more times too:
                                     # one host stall must not halve the answer (docs/tire.md)


def round4(n: float) -> int:
    return max(4, int(n) // 4 * 4)


def largest_holding(holds: Callable[[int], bool], lo: int, hi: int, ratio: float,
                    precision: float) -> tuple[int | None, list[tuple[int, bool]]]:
    """Largest n in [lo, hi] (a multiple of 4) with holds(n), assuming monotonicity;
    None when even lo fails. Returns it with every probe made, in order."""
    probes: list[tuple[int, bool]] = []

    def probe(n: int) -> bool:
        ok = holds(n)
        probes.append((n, ok))
        return ok

    n = round4(lo)
    if not probe(n):
        return None, probes
    good, bad = n, None
    while bad is None and good < hi:
        n = min(round4(good * ratio), round4(hi))
        if n <= good:
            break
        if probe(n):
            good = n
        else:
            bad = n
    if bad is None:
        return good, probes
    while bad / good - 1 > precision and bad - good > 4:
        mid = round4((good * bad) ** 0.5)
        if mid <= good or mid >= bad:
            mid = round4((good + bad) / 2)
        if mid <= good or mid >= bad:
            break
        if probe(mid):
            good = mid
        else:
            bad = mid
    return good, probes


def probe_args(spec: SweepSpec, masses: int, threads: int, policy: str) -> list[str]:
    args = ["tire", "--mode", "realtime", "--masses", str(masses), "--threads", str(threads),
            "--policy", policy, "--solver", spec.solver, "--lock", spec.lock,
            "--period-ms", f"{spec.period_ms:g}", "--steps", str(spec.steps), "--stop-on-miss",
            "--time-limit-s", str(max(10.0, 3 * spec.steps * spec.period_ms / 1000))]
    if spec.cpus:
        args += ["--cpus", spec.cpus]
    return args


def run_probe(engine: str, args: list[str]) -> dict:
    from rtgauge.loads.supervise import die_with_parent   # the probe dies with rtgauge, even by SIGKILL
    p = subprocess.run([engine, *args], capture_output=True, text=True, timeout=600, preexec_fn=die_with_parent())
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        raise UserError(f"the engine printed no result for {' '.join(args)} "
                        f"(exit {p.returncode}): {p.stderr.strip()[-300:]}")
    if p.returncode not in (0, 3) or not doc.get("ok"):
        raise UserError(f"tire probe failed: {doc.get('error') or p.stderr.strip()}")
    return doc


def holds_realtime(doc: dict) -> bool:
    """Every step computed and none late."""
    v = doc.get("verdicts", {})
    return bool(v.get("hard_realtime", {}).get("pass")) and bool(v.get("completed", {}).get("pass"))


def run_sweep(engine: str, spec: SweepSpec, progress: Callable[[str], None] | None = None) -> dict:
    """The sweep's result document: per (threads, policy) the largest n and its probes."""
    rows = []
    docs = []
    for policy in spec.policies:
        for threads in spec.threads:
            def holds(n: int) -> bool:
                for attempt in range(1 + spec.retries):
                    doc = run_probe(engine, probe_args(spec, n, threads, policy))
                    docs.append(doc)
                    ok = holds_realtime(doc)
                    if progress:
                        progress(f"tire {policy} {threads} threads, {n} masses: {'holds' if ok else 'late'}"
                                 + (f" (attempt {attempt + 1})" if attempt else ""))
                    if ok:
                        return True
                return False
            lo = max(spec.masses_min, 4 * threads)
            best, probes = largest_holding(holds, lo, spec.masses_max, spec.grid_ratio, spec.precision)
            rows.append({"threads": threads, "policy": policy, "largest_masses": best,
                         "probes": [{"masses": n, "holds": ok} for n, ok in probes]})
    return {"spec": spec.__dict__, "results": rows, "probe_docs": docs}


def sweep_document(result: dict, fit: dict | None) -> dict:
    """A result document in the engine's contract, for the store."""
    metrics = {}
    for r in result["results"]:
        key = f"largest_masses#threads={r['threads']},policy={r['policy']}"
        metrics[key] = {"unit": "masses", "value": r["largest_masses"] or 0}
    if fit:
        for name, value in fit["terms_ns"].items():
            metrics[f"fit_{name}"] = {"unit": "ns", "value": value}
        metrics["fit_residual_rms"] = {"unit": "ns", "value": fit["residual_rms_ns"]}
    spec = dict(result["spec"])
    return {"schema": 1, "test": "tire-sweep", "ok": True, "interrupted": False, "params": spec,
            "env": {}, "metrics": metrics, "verdicts": {},
            "sweep": [{k: v for k, v in r.items()} for r in result["results"]],
            "fit": fit}


_SPEC_KEYS = {"masses_min": int, "masses_max": int, "grid_ratio": (int, float), "precision": (int, float),
              "threads": (list, str), "policies": list, "solver": str, "lock": str,
              "period_ms": (int, float), "steps": int, "cpus": str, "retries": int}


def spec_from_table(table: object, where: str) -> SweepSpec:
    """A SweepSpec from a profile's [tire] table; UserError naming the bad key.
    threads = "published" (the default) or a list of counts."""
    if not isinstance(table, dict):
        raise UserError(f"{where}: [tire] must be a table.")
    unknown = sorted(set(table) - set(_SPEC_KEYS))
    if unknown:
        raise UserError(f"{where} [tire]: unknown key {unknown[0]!r}; known keys are "
                        f"{', '.join(sorted(_SPEC_KEYS))}.")
    kw = {}
    for k, v in table.items():
        if not isinstance(v, _SPEC_KEYS[k]) or isinstance(v, bool):
            raise UserError(f"{where} [tire]: {k} has the wrong type; see docs/tire.md.")
        kw[k] = v
    tire = catalogue().test("tire", f"{where} [tire]")
    masses, threads_opt, period, steps = (tire.option(n) for n in ("masses", "threads", "period-ms", "steps"))
    policies, solvers, locks = (tire.option(n).choices for n in ("policy", "solver", "lock"))
    threads = kw.pop("threads", "published")
    if threads != "published":
        if not (isinstance(threads, list) and threads and all(isinstance(t, int) and within(threads_opt, t)
                                                               for t in threads)):
            raise UserError(f"{where} [tire]: threads must be \"published\" or a list of counts from "
                            f"{threads_opt.min} to {threads_opt.max}.")
        kw["threads"] = sorted(set(threads))
    spec = SweepSpec(**kw)
    checks = [
        (masses.min <= spec.masses_min <= spec.masses_max <= masses.max,
         f"masses_min and masses_max must satisfy {masses.min} <= min <= max <= {masses.max}"),
        (spec.grid_ratio > 1.0, "grid_ratio must be above 1"),
        (0 < spec.precision < 1, "precision must be between 0 and 1"),
        (set(spec.policies) <= set(policies) and spec.policies, f"policies may list {_either(policies, 'and')}"),
        (spec.solver in solvers, f"solver must be {_either(solvers, 'or')}"),
        (spec.lock in locks, f"lock must be {_either(locks, 'or')}"),
        (within(period, spec.period_ms), f"period_ms must be from {period.min:g} to {period.max:g}"),
        (within(steps, spec.steps), f"steps must be from {steps.min} to {steps.max}"),
    ]
    for ok, sentence in checks:
        if not ok:
            raise UserError(f"{where} [tire]: {sentence}.")
    return spec


def _either(choices: tuple[str, ...], word: str) -> str:
    """'a, b or c' (with word 'and': 'a, b and c')."""
    return ", ".join(choices[:-1]) + f" {word} {choices[-1]}" if len(choices) > 1 else choices[0]


def sweep_and_store(store, run_id: int, spec: SweepSpec, say: Callable[[str], None]) -> dict:
    """Run the sweep after a plan's jobs, fit the cost equation to its probes,
    store both as one measurement (test "tire-sweep") and return its document."""
    from rtgauge.enginebin import engine_path
    from rtgauge.tire.fit import fit_cost, point_from_doc

    result = run_sweep(engine_path(), spec, say)
    points = [p for p in (point_from_doc(d) for d in result["probe_docs"]) if p]
    doc = sweep_document(result, fit_cost(points))
    store.add_measurement(run_id, {"name": "tire-sweep", "tool": "rtgauge", "test": "tire-sweep",
                                   "condition": "idle"}, doc)
    for r in result["results"]:
        say(f"tire, {r['policy']}, {r['threads']} threads: hard real-time up to "
            f"{r['largest_masses'] or 0:,} masses at {spec.period_ms:g} ms")
    return doc
