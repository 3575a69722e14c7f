"""Sustained rate of the hardware-in-the-loop loop: the shortest period at which a
long run (default 1,000,000 frames) loses no frame and misses no deadline, per
payload size. The counterpart of the published maximum sustained interrupt rate,
measured through the whole loop (device -> network stack -> simulation step ->
reply) instead of a timer.

Search: probe the start period; while it holds, halve the period, while it fails,
double it; then bisect (geometrically) between the shortest period that held and
the longest that failed until they are within `precision`. Every probe is a full
run of `frames` frames: a loop that holds for 1,000 frames may not for a million,
so the answer is only as good as the run length. A probe that fails is repeated
`retries` times (one host stall must not halve the answer) and fails only if every
attempt does."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

from rtgauge.catalogue import catalogue, within
from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.loads.supervise import die_with_parent
from rtgauge.records import engine_document
from rtgauge.search import hardest_holding
from rtgauge.stops import run_child


@dataclass
class SustainedSpec:
    payload: str = "none"              # none | work | tire
    sizes: list[int] = field(default_factory=lambda: [0])  # work-us (work) or masses (tire); ignored for none
    frames: int = 1_000_000
    start_us: int = 1000               # first period probed
    min_us: int | None = None          # None: the engine's shortest --period-us (check_spec sets it)
    max_us: int = 100_000
    precision: float = 0.05            # stop when failing/holding periods are within 5 %
    retries: int = 1
    frame_bytes: int = 64
    threads: int = 1                   # tire solver threads
    policy: str = "fifo"
    extra: list[str] = field(default_factory=list)   # further engine options (e.g. --cpus 0-1)


def probe_args(spec: SustainedSpec, size: int, period_us: int) -> list[str]:
    args = ["hil", "--frames", str(spec.frames), "--period-us", str(period_us),
            "--payload", spec.payload, "--frame-bytes", str(spec.frame_bytes), "--policy", spec.policy]
    if spec.payload == "work":
        args += ["--work-us", str(size)]
    elif spec.payload == "tire":
        args += ["--masses", str(size), "--threads", str(spec.threads), "--solver", "fast"]
    return args + list(spec.extra)


def run_probe(engine: str, args: list[str], timeout: float) -> dict:
    try:
        p = run_child([engine, *args], timeout=timeout,
                      preexec_fn=die_with_parent())   # dies with rtgauge, even by SIGKILL; ends on a stop
    except subprocess.TimeoutExpired:
        raise UserError(f"a hil probe ran past {timeout:.0f} s: {' '.join(args)}")
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        raise UserError(f"the engine printed no result for {' '.join(args)} "
                        f"(exit {p.returncode}): {p.stderr.strip()[-300:]}")
    if not doc.get("ok"):
        raise UserError(f"hil probe failed: {doc.get('error') or p.stderr.strip()}")
    return doc


def holds(doc: dict) -> bool:
    """Every frame answered, every reply back before the next frame was due."""
    m = doc["metrics"]
    return (m["lost_frames"]["value"] == 0 and m["misses"]["value"] == 0
            and m["sent"]["value"] == doc["params"]["frames"] and not doc.get("interrupted"))


def shortest_holding(probe: Callable[[int], bool], start: int, lo: int, hi: int,
                     precision: float) -> tuple[int | None, list[tuple[int, bool]]]:
    """Shortest period in [lo, hi] (us) for which probe holds, assuming a longer period
    never does worse; None when even hi fails. Returns it with every probe, in order.
    The search is rtgauge/search.py's, the one the tire sweep uses: from start, halve
    the period while it holds (double it while it fails), then a geometric bisection."""
    def middle(good: int, bad: int) -> int | None:
        if not (good / bad - 1 > precision and good - bad > 1):
            return None
        mid = int(round((good * bad) ** 0.5))
        if mid <= bad or mid >= good:
            mid = (good + bad) // 2
        return None if mid <= bad or mid >= good else mid

    return hardest_holding(probe, min(max(start, lo), hi),
                           harder=lambda p: max(lo, p // 2) if p > lo else None,
                           easier=lambda p: min(hi, p * 2) if p < hi else None,
                           middle=middle)


def run_sustained(engine: str, spec: SustainedSpec, progress: Callable[[str], None] | None = None) -> dict:
    """Per payload size: the shortest holding period, every probe, and the document
    of the shortest holding run (its round trip and Ti/Ts/Tw)."""
    if spec.min_us is None:
        spec = replace(spec, min_us=int(catalogue(engine).test("hil").option("period-us").min))
    rows = []
    for size in spec.sizes:
        best_doc: dict = {}

        def probe(period_us: int) -> bool:
            # generous: the run itself plus the start delay, the linger and slack
            timeout = spec.frames * period_us / 1e6 * 3 + 30
            for attempt in range(1 + spec.retries):
                doc = run_probe(engine, probe_args(spec, size, period_us), timeout)
                ok = holds(doc)
                if progress:
                    progress(f"hil {spec.payload} {size}: {period_us} us "
                             f"{'holds' if ok else 'fails'}" + (f" (attempt {attempt + 1})" if attempt else ""))
                if ok:
                    if not best_doc or period_us < best_doc["params"]["period_us"]:
                        best_doc.clear()
                        best_doc.update(doc)
                    return True
            return False

        best, probes = shortest_holding(probe, spec.start_us, spec.min_us, spec.max_us, spec.precision)
        row = {"payload": spec.payload, "size": size, "shortest_period_us": best,
               "rate_hz": round(1e6 / best, 1) if best else None,
               "probes": [{"period_us": p, "holds": ok} for p, ok in probes]}
        if best_doc:
            m = best_doc["metrics"]
            row["at_shortest"] = {k: {q: m[k][q] for q in ("p50", "p99", "max")}
                                  for k in ("round_trip", "ti", "ts", "tw") if k in m}
        rows.append(row)
    return {"spec": asdict(spec), "results": rows}


def sustained_document(result: dict) -> dict:
    """One result document in the engine's contract (test "hil-sustained")."""
    metrics, verdicts = {}, {}
    spec = result["spec"]
    for r in result["results"]:
        tag = f"payload={r['payload']},size={r['size']}"
        shortest = r["shortest_period_us"]
        # a size that fails even at max_us has no period to report: only its verdict says so
        if shortest:
            metrics[f"shortest_period#{tag}"] = {"unit": "us", "value": shortest}
            metrics[f"sustained_rate#{tag}"] = {"unit": "Hz", "value": r["rate_hz"]}
        verdicts[f"sustained#{tag}"] = {
            "pass": bool(shortest),
            "detail": (f"no lost frame and no miss over {spec['frames']} frames down to {shortest} us"
                       if shortest else f"lost frames or misses even at {spec['max_us']} us")}
    return engine_document("hil-sustained", ok=True, params=spec, metrics=metrics, verdicts=verdicts,
                           sustained=result["results"])


def check_spec(spec: SustainedSpec, where: str) -> SustainedSpec:
    """The sweep spec within what the engine's hil test takes (its catalogue); UserError otherwise."""
    hil = catalogue().test("hil", where)
    period, frames, payloads, policies = (hil.option(n) for n in ("period-us", "frames", "payload", "policy"))
    size_opt = {"work": hil.option("work-us"), "tire": hil.option("masses")}.get(spec.payload)
    if spec.min_us is None:
        spec.min_us = int(period.min)
    checks = [
        (spec.payload in payloads.choices, f"payload must be {_either(payloads.choices)}"),
        (bool(spec.sizes) and all(isinstance(s, int) and s >= 0 for s in spec.sizes), "sizes must be a list of counts"),
        (spec.payload != "tire" or all(s >= 4 and s % 4 == 0 for s in spec.sizes),
         "tire sizes are masses, multiples of 4"),
        (size_opt is None or all(within(size_opt, s) for s in spec.sizes),
         f"sizes must be from {size_opt.min} to {size_opt.max} (--{size_opt.name})" if size_opt else ""),
        (within(frames, spec.frames), f"frames must be from {frames.min} to {frames.max}"),
        (period.min <= spec.min_us <= spec.start_us <= spec.max_us <= period.max,
         f"periods must satisfy {period.min} <= min_us <= start_us <= max_us <= {period.max}"),
        (0 < spec.precision < 1, "precision must be between 0 and 1"),
        (0 <= spec.retries <= 10, "retries must be from 0 to 10"),
        (within(hil.option("frame-bytes"), spec.frame_bytes),
         f"frame_bytes must be from {hil.option('frame-bytes').min} to {hil.option('frame-bytes').max}"),
        (within(hil.option("threads"), spec.threads),
         f"threads must be from {hil.option('threads').min} to {hil.option('threads').max}"),
        (spec.policy in policies.choices, f"policy must be {_either(policies.choices)}"),
    ]
    for ok, sentence in checks:
        if not ok:
            raise UserError(f"{where}: {sentence}.")
    return spec


def _either(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]


def spec_from_table(table: object, where: str) -> SustainedSpec:
    """A SustainedSpec from a profile's [hil_sustained] table; UserError naming the bad key."""
    if not isinstance(table, dict):
        raise UserError(f"{where}: [hil_sustained] must be a table.")
    known = set(SustainedSpec.__dataclass_fields__)
    unknown = sorted(set(table) - known)
    if unknown:
        raise UserError(f"{where} [hil_sustained]: unknown key {unknown[0]!r}; known keys are "
                        f"{', '.join(sorted(known))}.")
    try:
        spec = SustainedSpec(**table)
    except TypeError as e:
        raise UserError(f"{where} [hil_sustained]: {e}.")
    return check_spec(spec, f"{where} [hil_sustained]")


def sustained_and_store(store, run_id: int, spec: SustainedSpec, say: Callable[[str], None],
                        engine: str | None = None) -> dict:
    """Run the sweep and store it as one measurement (test "hil-sustained")."""
    doc = sustained_document(run_sustained(engine or engine_path(), spec, say))
    store.add_measurement(run_id, {"name": "hil-sustained", "tool": "rtgauge", "test": "hil-sustained",
                                   "condition": "idle"}, doc)
    for r in doc["sustained"]:
        shortest = r["shortest_period_us"]
        say(f"hil {r['payload']} {r['size']}: " + (f"sustains {shortest} us ({r['rate_hz']:,} Hz) over "
            f"{spec.frames:,} frames" if shortest else f"fails even at {spec.max_us} us"))
    return doc
