"""Sweep of the tire model, the study's maps (docs/tire.md, "Sweep and maps").

Per policy and thread count:

1. the grid: realtime probes of `steps` steps (the study's 6000 by default) at
   masses_min, masses_min·grid_ratio, ... run to the end (no --stop-on-miss), so
   each gives its miss count (the soft-real-time map); the grid goes on past the
   first miss until a probe misses nearly every step (`soft_until`) or reaches
   masses_max;
2. the hard limit: between the largest size that held below the first late
   one and that late size, bisection with --stop-on-miss probes (hold or not);
3. the real-fast curve: at every grid size, `realfast_steps` steps as fast as
   possible, the wall time;
4. the pretest map: the grid again in the engine's pretest mode (0.5 ms) with
   `pretest_steps` steps, run to the end.

Every probe is an engine run stored as its own `tire` measurement, so the maps
and curves are read back like any tire job's. Holding is assumed monotone in n
(a bigger tire never costs less per step); noise can break that locally, so the
hard limit is "the largest n seen to hold with every smaller probe on the way
holding", not a proof. A late probe is repeated `retries` times and counts as
late only when every attempt is late (one host stall must not halve the answer);
every attempt is stored."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Callable

from rtgauge.catalogue import catalogue, within
from rtgauge.errors import UserError
from rtgauge.search import hardest_holding, narrow

STUDY_STEPS = 6000          # the study's probes: 60 s of simulated time at 10 ms
PRETEST_PERIOD_MS = 0.5     # the engine's --mode pretest (docs/engine.md)


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
    steps: int = STUDY_STEPS         # per probe: 60 s at 100 Hz, the study's
    cpus: str | None = None
    retries: int = 1                 # a probe is late only when late this many more times too:
                                     # one host stall must not halve the answer (docs/tire.md)
    soft_until: float = 0.99         # the grid (soft map) ends once a probe misses this share of steps
    realfast: bool = True            # the real-fast curves
    realfast_steps: int = STUDY_STEPS
    pretest: bool = True             # the pretest map
    pretest_steps: int = STUDY_STEPS
    pretest_masses_min: int = 100
    time_limit_s: float = 600.0      # per probe: a size far too big for the period stops here

    @property
    def short(self) -> bool:
        """Probes shorter than the study's: the maps say so."""
        return min(self.steps, self.realfast_steps, self.pretest_steps) < STUDY_STEPS


def round4(n: float) -> int:
    return max(4, int(n) // 4 * 4)


def largest_holding(holds: Callable[[int], bool], lo: int, hi: int, ratio: float,
                    precision: float) -> tuple[int | None, list[tuple[int, bool]]]:
    """Largest n in [lo, hi] (a multiple of 4) with holds(n), assuming monotonicity;
    None when even lo fails. Returns it with every probe made, in order. The search is
    rtgauge/search.py's, the one the HIL sustained-rate sweep uses: from lo up a ×ratio
    grid until a size fails, then a geometric bisection to `precision`."""
    def harder(n: int) -> int | None:
        if n >= hi:
            return None
        nxt = min(round4(n * ratio), round4(hi))
        return nxt if nxt > n else None

    return hardest_holding(holds, round4(lo), harder=harder, easier=lambda n: None,
                           middle=lambda good, bad: midpoint(good, bad, precision))


def midpoint(good: int, bad: int, precision: float) -> int | None:
    """The next size to try in [good, bad) (good holds, bad does not), a multiple of 4;
    None once the interval is within `precision` (or 4 masses)."""
    if not (bad / good - 1 > precision and bad - good > 4):
        return None
    mid = round4((good * bad) ** 0.5)
    if mid <= good or mid >= bad:
        mid = round4((good + bad) / 2)
    return None if mid <= good or mid >= bad else mid


def grid_sizes(lo: int, hi: int, ratio: float) -> list[int]:
    """lo, lo·ratio, ... (multiples of 4), ending with hi when the grid passes it."""
    out = [round4(lo)]
    while out[-1] < hi:
        n = min(round4(out[-1] * ratio), round4(hi))
        if n <= out[-1]:
            break
        out.append(n)
    return out


def probe_args(spec: SweepSpec, masses: int, threads: int, policy: str, mode: str = "realtime",
               stop_on_miss: bool = False) -> list[str]:
    period = PRETEST_PERIOD_MS if mode == "pretest" else spec.period_ms
    steps = {"realtime": spec.steps, "pretest": spec.pretest_steps, "realfast": spec.realfast_steps}[mode]
    limit = spec.time_limit_s if mode == "realfast" else min(spec.time_limit_s,
                                                              max(10.0, 3 * steps * period / 1000))
    args = ["tire", "--mode", mode, "--masses", str(masses), "--threads", str(threads),
            "--policy", policy, "--solver", spec.solver, "--lock", spec.lock,
            "--steps", str(steps), "--time-limit-s", f"{limit:g}"]
    if mode != "pretest":        # the engine's pretest has its own period
        args += ["--period-ms", f"{period:g}"]
    if stop_on_miss:
        args.append("--stop-on-miss")
    if spec.cpus:
        args += ["--cpus", spec.cpus]
    return args


def run_probe(engine: str, args: list[str]) -> dict:
    from rtgauge.loads.supervise import die_with_parent   # the probe dies with rtgauge, even by SIGKILL
    p = subprocess.run([engine, *args], capture_output=True, text=True, timeout=86400, preexec_fn=die_with_parent())
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


def misses_of(doc: dict) -> int:
    return int(((doc.get("metrics") or {}).get("misses") or {}).get("value") or 0)


def steps_of(doc: dict) -> int:
    return int(((doc.get("metrics") or {}).get("steps") or {}).get("value") or 0)


class Prober:
    """Runs probes, keeps every document, and tells the caller of each."""

    def __init__(self, engine: str, spec: SweepSpec, progress: Callable[[str], None] | None,
                 on_doc: Callable[[dict, str], None] | None):
        self.engine, self.spec, self.progress, self.on_doc = engine, spec, progress, on_doc
        self.docs: list[dict] = []

    def run(self, masses: int, threads: int, policy: str, mode: str, stop_on_miss: bool = False,
            attempt: int = 0) -> dict:
        doc = run_probe(self.engine, probe_args(self.spec, masses, threads, policy, mode, stop_on_miss))
        self.docs.append(doc)
        label = f"tire-sweep/{mode}/{policy}/{threads}t/{masses}" + (f"/retry{attempt}" if attempt else "")
        if self.on_doc:
            self.on_doc(doc, label)
        if self.progress:
            what = (f"{doc['metrics']['wall_s']['value']:.3g} s" if mode == "realfast"
                    else f"{misses_of(doc)} of {steps_of(doc)} steps late")
            self.progress(f"tire {mode} {policy} {threads} threads, {masses:,} masses: {what}"
                          + (f" (attempt {attempt + 1})" if attempt else ""))
        return doc

    def realtime(self, masses: int, threads: int, policy: str, mode: str = "realtime",
                 stop_on_miss: bool = False) -> dict:
        """A realtime/pretest probe, repeated while late (up to `retries` more times);
        the best attempt (fewest misses). A run that missed nearly every step
        (`soft_until`) is not repeated: no host stall explains that."""
        best = None
        for attempt in range(1 + self.spec.retries):
            doc = self.run(masses, threads, policy, mode, stop_on_miss, attempt)
            if best is None or misses_of(doc) < misses_of(best):
                best = doc
            if holds_realtime(doc) or (not stop_on_miss and misses_of(doc) >= self.spec.soft_until * steps_of(doc)):
                break
        return best


def soft_grid(prober: Prober, threads: int, policy: str, mode: str, lo: int) -> list[dict]:
    """Full probes along the grid until nearly every step is late: the soft map's row."""
    spec = prober.spec
    cells = []
    for n in grid_sizes(max(lo, 4 * threads), spec.masses_max, spec.grid_ratio):
        doc = prober.realtime(n, threads, policy, mode)
        done = steps_of(doc)
        cells.append({"masses": n, "misses": misses_of(doc), "steps": done, "holds": holds_realtime(doc)})
        if done == 0 or misses_of(doc) >= spec.soft_until * done:
            break
    return cells


def run_sweep(engine: str, spec: SweepSpec, progress: Callable[[str], None] | None = None,
              on_doc: Callable[[dict, str], None] | None = None) -> dict:
    """The sweep's result document: per (threads, policy) the soft-map row, the
    largest n holding (hard limit) with the smallest late n above it, the real-fast
    curve and the pretest row. on_doc(doc, label) sees every probe's document."""
    prober = Prober(engine, spec, progress, on_doc)
    rows = []
    for policy in spec.policies:
        for threads in spec.threads:
            grid = soft_grid(prober, threads, policy, "realtime", spec.masses_min)
            probes = [{"masses": c["masses"], "holds": c["holds"]} for c in grid]
            first_late = next((i for i, c in enumerate(grid) if not c["holds"]), None)
            if first_late is None:
                best, lost = grid[-1]["masses"], None
            elif first_late == 0:
                best, lost = None, grid[0]["masses"]
            else:
                lost = grid[first_late]["masses"]

                def probe(n: int) -> bool:
                    ok = holds_realtime(prober.realtime(n, threads, policy, stop_on_miss=True))
                    probes.append({"masses": n, "holds": ok})
                    return ok
                best = narrow(probe, grid[first_late - 1]["masses"], lost,
                              lambda good, bad: midpoint(good, bad, spec.precision))
                lost = min(p["masses"] for p in probes if not p["holds"] and p["masses"] > best)
            row = {"threads": threads, "policy": policy, "period_ms": spec.period_ms,
                   "largest_masses": best, "lost_at": lost, "probes": probes, "soft": grid}
            if spec.realfast:
                row["realfast"] = []
                for c in grid:
                    doc = prober.run(c["masses"], threads, policy, "realfast")
                    if (doc.get("verdicts", {}).get("completed") or {}).get("pass"):
                        row["realfast"].append({"masses": c["masses"], "steps": steps_of(doc),
                                                "wall_s": doc["metrics"]["wall_s"]["value"]})
            if spec.pretest:
                row["pretest"] = soft_grid(prober, threads, policy, "pretest", spec.pretest_masses_min)
            rows.append(row)
    return {"spec": dict(spec.__dict__, short=spec.short), "results": rows, "probe_docs": prober.docs}


def sweep_document(result: dict, fit: dict | None) -> dict:
    """A result document in the engine's contract, for the store."""
    metrics = {}
    for r in result["results"]:
        tag = f"threads={r['threads']},policy={r['policy']}"
        metrics[f"largest_masses#{tag}"] = {"unit": "masses", "value": r["largest_masses"] or 0}
        if r.get("lost_at"):
            metrics[f"lost_at_masses#{tag}"] = {"unit": "masses", "value": r["lost_at"]}
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
              "period_ms": (int, float), "steps": int, "cpus": str, "retries": int,
              "soft_until": (int, float), "realfast": bool, "realfast_steps": int, "pretest": bool,
              "pretest_steps": int, "pretest_masses_min": int,
              "time_limit_s": (int, float)}


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
        if not isinstance(v, _SPEC_KEYS[k]) or (isinstance(v, bool) and _SPEC_KEYS[k] is not bool):
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
        (all(within(steps, x) for x in (spec.steps, spec.realfast_steps, spec.pretest_steps)),
         f"steps, realfast_steps and pretest_steps must be from {steps.min} to {steps.max}"),
        (masses.min <= spec.pretest_masses_min <= spec.masses_max,
         f"pretest_masses_min must be from {masses.min} to masses_max"),
        (0 < spec.soft_until <= 1, "soft_until must be above 0 and at most 1"),
        (spec.retries >= 0, "retries must be 0 or more"),
        (0 < spec.time_limit_s <= 86400, "time_limit_s must be above 0 and at most 86400"),
    ]
    for ok, sentence in checks:
        if not ok:
            raise UserError(f"{where} [tire]: {sentence}.")
    return spec


def _either(choices: tuple[str, ...], word: str) -> str:
    """'a, b or c' (with word 'and': 'a, b and c')."""
    return ", ".join(choices[:-1]) + f" {word} {choices[-1]}" if len(choices) > 1 else choices[0]


def sweep_and_store(store, run_id: int, spec: SweepSpec, say: Callable[[str], None],
                    engine: str | None = None) -> dict:
    """Run the sweep after a plan's jobs, each probe stored as it ends (a `tire`
    measurement named tire-sweep/MODE/POLICY/Kt/N), then fit the cost equation to the
    probes and store the limits, curves and fit as one measurement (test "tire-sweep")."""
    from rtgauge.enginebin import engine_path
    from rtgauge.tire.fit import fit_cost, point_from_doc

    def keep(doc: dict, label: str) -> None:
        args = probe_args(spec, doc["params"]["masses"], doc["params"]["threads"], doc["params"]["policy"],
                          doc["params"]["mode"], bool(doc["params"].get("stop_on_miss")))
        store.add_measurement(run_id, {"name": label, "tool": "engine", "test": "tire", "condition": "idle",
                                       "command": ["rtgauge-engine", *args]}, doc)

    result = run_sweep(engine or engine_path(), spec, say, keep)
    points = [p for p in (point_from_doc(d) for d in result["probe_docs"]) if p]
    doc = sweep_document(result, fit_cost(points))
    store.add_measurement(run_id, {"name": "tire-sweep", "tool": "rtgauge", "test": "tire-sweep",
                                   "condition": "idle"}, doc)
    for r in result["results"]:
        held = f"up to {r['largest_masses']:,} masses" if r["largest_masses"] else "at no size tried"
        lost = f", lost at {r['lost_at']:,}" if r.get("lost_at") else ""
        say(f"tire, {r['policy']}, {r['threads']} threads: hard real-time {held}{lost} at "
            f"{spec.period_ms:g} ms ({1000 / spec.period_ms:g} Hz)")
    return doc
