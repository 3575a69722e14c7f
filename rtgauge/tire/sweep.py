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
and curves are read back like any tire job's. The maps report what happened: a
probe is late when any attempt missed a deadline (a sporadic miss is the finding
the study is about, not noise to be retried away); a late grid probe is repeated
`retries` times only to tell a sporadic miss from a systematic one, and every
attempt is stored and shown. Only the bisection of the hard limit assumes holding
is monotone in n (between the last grid size that held and the first late one);
the soft map assumes nothing, and sizes that held above a late one are kept as
such. The pretest also runs over a thread axis (up to four threads per logical
CPU), each thread count from its smallest model (one mass a thread, down to
pretest_masses_min, 4 at the least), to find what the study's pretest found: the
fewest threads that miss at the smallest model, and the thread ceiling (the largest
thread count tried below the fewest at which most sizes miss)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Callable

from rtgauge.analysis.run.tire import pretest_threads_sentence, thread_ceiling
from rtgauge.bounds import parse_cpu_list
from rtgauge.catalogue import catalogue, within
from rtgauge.defaults import TIRE_PERIOD_MS
from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.loads.supervise import die_with_parent
from rtgauge.records import engine_document
from rtgauge.search import hardest_holding, narrow
from rtgauge.stops import run_child
from rtgauge.tire.fit import fit_cost, point_from_doc
from rtgauge.trace.counters import others_load, take_snapshot

STUDY_STEPS = 6000          # the study's probes: 60 s of simulated time at 10 ms
PRETEST_PERIOD_MS = TIRE_PERIOD_MS["pretest"]     # the engine's --mode pretest (docs/engine.md)


def published_thread_counts() -> list[int]:
    """1, one per physical core, one per logical CPU, 1.5 and two per logical CPU
    (the study's thread classes, docs/tire.md)."""
    logical = len(os.sched_getaffinity(0))
    cores = physical_cores() or logical
    return sorted({1, min(cores, logical), logical, max(1, round(1.5 * logical)), 2 * logical})


# The pretest's thread axis: these counts up to four threads per logical CPU (the study's
# pretest went to 48 threads on 12 logical CPUs and first missed at 40).
PRETEST_THREAD_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 40, 48, 64, 96, 128)


def pretest_thread_counts(threads: list[int]) -> list[int]:
    """The sweep's thread counts and the pretest's thread axis up to 4 per logical CPU."""
    top = 4 * len(os.sched_getaffinity(0))
    return sorted(set(threads) | {t for t in PRETEST_THREAD_STEPS if t <= top})


# Pinning is a choice per policy: the study's threads were not pinned under the fair
# scheduler, where the kernel moves them; FIFO threads are pinned round-robin over the
# CPUs, a fixed placement as a real-time design would make (docs/tire.md).
DEFAULT_PIN = {"other": "none", "fifo": "round-robin", "rr": "round-robin"}


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
    period_ms: float = TIRE_PERIOD_MS["realtime"]
    steps: int = STUDY_STEPS         # per probe: 60 s at 100 Hz, the study's
    cpus: str | None = None
    retries: int = 1                 # a late grid probe is run this many more times, to tell a
                                     # sporadic miss from a systematic one; late if any attempt is
    pin: dict = field(default_factory=lambda: dict(DEFAULT_PIN))   # policy -> round-robin | none
    soft_until: float = 0.99         # the grid (soft map) ends once a probe misses this share of steps
    sporadic_below: float = 0.01     # a late grid probe is repeated only when it missed fewer than this
                                     # share of its steps: more is systematic on its face (1 % of 6000
                                     # steps at 10 ms is 600 ms of periods, longer than a host stall
                                     # but seconds-long ones); repeating it would show nothing new
    realfast: bool = True            # the real-fast curves
    realfast_steps: int = STUDY_STEPS
    pretest: bool = True             # the pretest map
    pretest_steps: int = STUDY_STEPS
    pretest_masses_min: int = 100
    pretest_thread_axis: bool = True  # the pretest over thread counts too (the thread ceiling)
    time_limit_s: float = 600.0      # per probe: a size far too big for the period stops here

    @property
    def short(self) -> bool:
        """Probes shorter than the study's: the maps say so."""
        return min(self.steps, self.realfast_steps, self.pretest_steps) < STUDY_STEPS


def round4(n: float) -> int:
    return max(4, int(n) // 4 * 4)


def smallest_model(threads: int, lo: int) -> int:
    """The smallest size a row of `threads` starts at: lo, but at least one mass a
    thread (the engine refuses more threads than masses), a multiple of 4."""
    return max(round4(lo), -(-threads // 4) * 4)


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
    args += ["--pin", spec.pin.get(policy, "round-robin")]
    return args


def run_probe(engine: str, args: list[str]) -> dict:
    # the probe dies with rtgauge, even by SIGKILL
    # a stop (Ctrl-C, SIGTERM) ends it too, even one whose KeyboardInterrupt was lost
    p = run_child([engine, *args], timeout=86400, preexec_fn=die_with_parent())
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


def in_stalls_text(doc: dict) -> str:
    """' (N of them in host stalls)' where late steps overlapped a stall the observer saw."""
    n = ((doc.get("metrics") or {}).get("late_in_stalls") or {}).get("value")
    return f" ({n:,} of them in host stalls)" if isinstance(n, int) and n > 0 and misses_of(doc) else ""


def steps_of(doc: dict) -> int:
    return int(((doc.get("metrics") or {}).get("steps") or {}).get("value") or 0)


class Prober:
    """Runs probes, keeps every document, and tells the caller of each."""

    def __init__(self, engine: str, spec: SweepSpec, progress: Callable[[str], None] | None,
                 on_doc: Callable[[dict, str], None] | None, stored: dict | None = None):
        self.engine, self.spec, self.progress, self.on_doc = engine, spec, progress, on_doc
        self.docs: list[dict] = []
        # run --resume: the probes the run stored before it stopped, by (label, stop_on_miss),
        # each replayed in order instead of measured again (the search decides as it did)
        self.stored = {k: list(v) for k, v in (stored or {}).items()}

    def run(self, masses: int, threads: int, policy: str, mode: str, stop_on_miss: bool = False,
            attempt: int = 0) -> dict:
        base = f"tire-sweep/{mode}/{policy}/{threads}t/{masses}"
        label = base + (f"/retry{attempt}" if attempt else "")
        replay = self.stored.get((base, bool(stop_on_miss)))
        if replay:
            doc = replay.pop(0)           # stored already: not measured, not stored again
        else:
            # is idle idle? what others ran on the probe's CPUs beside it (docs/loads.md): a
            # probe is stored as an idle job, and its misses are read as this system's
            cpus = parse_cpu_list(self.spec.cpus) if self.spec.cpus else sorted(os.sched_getaffinity(0))
            before = take_snapshot(cpus)
            doc = run_probe(self.engine, probe_args(self.spec, masses, threads, policy, mode, stop_on_miss))
            doc.setdefault("env", {})["others_load"] = others_load(before, take_snapshot(cpus), cpus)
            if self.on_doc:
                self.on_doc(doc, label)
        self.docs.append(doc)
        if self.progress:
            what = (f"{doc['metrics']['wall_s']['value']:.3g} s" if mode == "realfast"
                    else f"{misses_of(doc)} of {steps_of(doc)} steps late" + in_stalls_text(doc))
            self.progress(f"tire {mode} {policy} {threads} threads, {masses:,} masses: {what}"
                          + (f" (attempt {attempt + 1})" if attempt else ""))
        return doc

    def realtime(self, masses: int, threads: int, policy: str, mode: str = "realtime",
                 stop_on_miss: bool = False, repeat: bool = True) -> list[dict]:
        """A realtime/pretest probe: every attempt's document, in order. A late probe is
        repeated (up to `retries` more times, when repeat) to show whether its misses
        recur; it is late whatever the repeats do. A run that missed nearly every step
        (`soft_until`), or more than `sporadic_below` of them, is not repeated: it is not
        sporadic."""
        attempts = []
        for attempt in range(1 + (self.spec.retries if repeat else 0)):
            doc = self.run(masses, threads, policy, mode, stop_on_miss, attempt)
            attempts.append(doc)
            if holds_realtime(doc) or (not stop_on_miss and misses_of(doc) >= self.spec.sporadic_below * steps_of(doc)):
                break
        return attempts


def cell_of(masses: int, attempts: list[dict]) -> dict:
    """A map cell from every attempt: late when any attempt was; the first attempt's
    misses and the repeats' apart."""
    first = attempts[0]
    return {"masses": masses, "misses": misses_of(first), "steps": steps_of(first),
            "holds": all(holds_realtime(d) for d in attempts),
            "repeats": [{"misses": misses_of(d), "steps": steps_of(d)} for d in attempts[1:]]}


def soft_grid(prober: Prober, threads: int, policy: str, mode: str, lo: int) -> list[dict]:
    """Full probes along the grid until nearly every step is late: the soft map's row."""
    spec = prober.spec
    cells = []
    for n in grid_sizes(smallest_model(threads, lo), spec.masses_max, spec.grid_ratio):
        cell = cell_of(n, prober.realtime(n, threads, policy, mode))
        cells.append(cell)
        if cell["steps"] == 0 or cell["misses"] >= spec.soft_until * cell["steps"]:
            break
    return cells


def run_sweep(engine: str, spec: SweepSpec, progress: Callable[[str], None] | None = None,
              on_doc: Callable[[dict, str], None] | None = None, stored: dict | None = None) -> dict:
    """The sweep's result document: per (threads, policy) the soft-map row, the
    largest n holding (hard limit) with the smallest late n above it, the real-fast
    curve and the pretest row. on_doc(doc, label) sees every probe's document."""
    prober = Prober(engine, spec, progress, on_doc, stored)
    rows = []
    ceilings = []
    for policy in spec.policies:
        pretest_rows: dict[int, list[dict]] = {}
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
                    ok = holds_realtime(prober.realtime(n, threads, policy, stop_on_miss=True, repeat=False)[0])
                    probes.append({"masses": n, "holds": ok})
                    return ok
                best = narrow(probe, grid[first_late - 1]["masses"], lost,
                              lambda good, bad: midpoint(good, bad, spec.precision))
                lost = min(p["masses"] for p in probes if not p["holds"] and p["masses"] > best)
            held_above = sorted(c["masses"] for c in grid if c["holds"] and lost and c["masses"] > lost)
            row = {"threads": threads, "policy": policy, "period_ms": spec.period_ms,
                   "largest_masses": best, "lost_at": lost, "held_above_lost": held_above,
                   "probes": probes, "soft": grid}
            if spec.realfast:
                row["realfast"] = []
                for c in grid:
                    doc = prober.run(c["masses"], threads, policy, "realfast")
                    if (doc.get("verdicts", {}).get("completed") or {}).get("pass"):
                        row["realfast"].append({"masses": c["masses"], "steps": steps_of(doc),
                                                "wall_s": doc["metrics"]["wall_s"]["value"]})
            if spec.pretest:
                row["pretest"] = pretest_rows[threads] = soft_grid(prober, threads, policy, "pretest",
                                                                   spec.pretest_masses_min)
            rows.append(row)
        if spec.pretest and spec.pretest_thread_axis:
            for threads in pretest_thread_counts(spec.threads):
                if threads not in pretest_rows:
                    pretest_rows[threads] = soft_grid(prober, threads, policy, "pretest", spec.pretest_masses_min)
            ceilings.append({"policy": policy, **thread_ceiling(pretest_rows, len(os.sched_getaffinity(0))),
                             "rows": {str(t): r for t, r in sorted(pretest_rows.items())}})
    return {"spec": dict(spec.__dict__, short=spec.short), "results": rows, "pretest_threads": ceilings,
            "probe_docs": prober.docs}


def sweep_document(result: dict, fit: dict | None) -> dict:
    """A result document in the engine's contract, for the store."""
    metrics = {}
    for r in result["results"]:
        tag = f"threads={r['threads']},policy={r['policy']}"
        metrics[f"largest_masses#{tag}"] = {"unit": "masses", "value": r["largest_masses"] or 0}
        if r.get("lost_at"):
            metrics[f"lost_at_masses#{tag}"] = {"unit": "masses", "value": r["lost_at"]}
    for c in result.get("pretest_threads") or []:
        if c.get("first_miss_threads"):
            metrics[f"pretest_first_miss_threads#policy={c['policy']}"] = {"unit": "threads",
                                                                           "value": c["first_miss_threads"]}
        if c.get("ceiling_threads") and not c.get("ceiling_bound"):
            metrics[f"pretest_thread_ceiling#policy={c['policy']}"] = {"unit": "threads",
                                                                       "value": c["ceiling_threads"]}
    if fit:
        for name, value in fit["terms_ns"].items():
            metrics[f"fit_{name}"] = {"unit": "ns", "value": value}
        metrics["fit_residual_rms"] = {"unit": "ns", "value": fit["residual_rms_ns"]}
    spec = dict(result["spec"])
    return engine_document("tire-sweep", ok=True, params=spec, metrics=metrics,
                           sweep=[{k: v for k, v in r.items()} for r in result["results"]],
                           pretest_threads=result.get("pretest_threads") or [], fit=fit)


_SPEC_KEYS = {"masses_min": int, "masses_max": int, "grid_ratio": (int, float), "precision": (int, float),
              "threads": (list, str), "policies": list, "solver": str, "lock": str,
              "period_ms": (int, float), "steps": int, "cpus": str, "retries": int,
              "soft_until": (int, float), "sporadic_below": (int, float), "realfast": bool, "realfast_steps": int, "pretest": bool,
              "pretest_steps": int, "pretest_masses_min": int, "pretest_thread_axis": bool, "pin": dict,
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
    if "pin" in kw:
        pins = tire.option("pin").choices
        bad = [k for k, v in kw["pin"].items() if k not in policies or v not in pins]
        if bad:
            raise UserError(f"{where} [tire]: pin maps a policy ({_either(policies, 'or')}) to "
                            f"{_either(pins, 'or')}; {bad[0]!r} does not.")
        kw["pin"] = dict(DEFAULT_PIN, **kw["pin"])
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
        (0 < spec.sporadic_below <= spec.soft_until, "sporadic_below must be above 0 and at most soft_until"),
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
                    engine: str | None = None, stored: dict | None = None) -> dict:
    """Run the sweep after a plan's jobs, each probe stored as it ends (a `tire`
    measurement named tire-sweep/MODE/POLICY/Kt/N), then fit the cost equation to the
    probes and store the limits, curves and fit as one measurement (test "tire-sweep")."""
    def keep(doc: dict, label: str) -> None:
        args = probe_args(spec, doc["params"]["masses"], doc["params"]["threads"], doc["params"]["policy"],
                          doc["params"]["mode"], bool(doc["params"].get("stop_on_miss")))
        store.add_measurement(run_id, {"name": label, "tool": "engine", "test": "tire", "condition": "idle",
                                       "command": ["rtgauge-engine", *args]}, doc)

    result = run_sweep(engine or engine_path(), spec, say, keep, stored)
    points = [p for p in (point_from_doc(d) for d in result["probe_docs"]) if p]
    doc = sweep_document(result, fit_cost(points))
    store.add_measurement(run_id, {"name": "tire-sweep", "tool": "rtgauge", "test": "tire-sweep",
                                   "condition": "idle"}, doc)
    for r in result["results"]:
        held = f"up to {r['largest_masses']:,} masses" if r["largest_masses"] else "at no size tried"
        lost = f", lost at {r['lost_at']:,}" if r.get("lost_at") else ""
        above = (f"; held again at {', '.join(f'{n:,}' for n in r['held_above_lost'])}"
                 if r.get("held_above_lost") else "")
        say(f"tire, {r['policy']}, {r['threads']} threads: hard real-time {held}{lost}{above} at "
            f"{spec.period_ms:g} ms ({1000 / spec.period_ms:g} Hz)")
    for c in result.get("pretest_threads") or []:
        say(f"tire pretest, {c['policy']}: {pretest_threads_sentence(c)}")
    return doc
