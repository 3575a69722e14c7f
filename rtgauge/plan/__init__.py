"""The plan: a profile expanded into the ordered jobs of a run.

Each profile job becomes one engine job per condition and, when it asks for a
cross-check, a cyclictest job on the same settings right after it (same condition,
same CPUs), stored flagged as a cross-check (the stored key is `reference`, its first name).

A job with rounds = N > 1 runs N times, each round a separate engine invocation stored
as its own measurement with the job's name and its round K (1..N) as a field (the load
record also says load.round = {index, of}).
The rounds are interleaved (round 1 of every job, then round 2, ...), so a slow change
of the machine spreads over all rounds instead of shifting one job's."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rtgauge.bounds import check_cpu_list, parse_cpu_list
from rtgauge.catalogue import catalogue
from rtgauge.defaults import interval_us
from rtgauge.profiles import Profile
from rtgauge.tire.sweep import grid_sizes


@dataclass
class Job:
    name: str                 # "latency@idle", "latency@idle/cyclictest"
    tool: str                 # "engine", or a cross-check tool: its adapter's name (rtgauge/tools)
    test: str                 # engine test name
    condition: str
    options: dict = field(default_factory=dict)
    cpus: list[int] = field(default_factory=list)
    cross_check: bool = False  # a cross-check by another tool (stored as `reference`)
    expected_s: float = 5.0   # for the progress bar
    round: int | None = None  # 1..rounds when the job runs in several rounds
    rounds: int = 1
    if_available: list[str] = field(default_factory=list)   # flags wanted where the engine can (plan/optional.py)
    notes: list[str] = field(default_factory=list)          # stored with the measurement (env.notes)

    @property
    def label(self) -> str:
        """The name with its round, where the progress lists jobs."""
        return f"{self.name} (round {self.round})" if self.round else self.name

    def engine_args(self) -> list[str]:
        """The engine's command-line options for this job (after the test name)."""
        args: list[str] = []
        for key, value in self.options.items():
            if value is True:
                args.append(f"--{key}")
            elif value is False:
                continue
            else:
                args += [f"--{key}", str(value)]
        return args


def allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


# A job's length, decided once here for the progress bar, the engine's watchdog and the
# host's own deadline (docs/engine.md "The watchdog"). A test that counts iterations
# without a period has no planned length; it is bounded at ITERATION_CEILING_S an
# iteration, hundreds of times what the evaluation's tests take on a 2-vCPU VM
# (switch at 1000 threads: 2.5 us a switch; sem with 128 waiters: 4 us a round).
ITERATION_CEILING_S = 100e-6
WATCHDOG_MARGIN_S = 30.0     # the engine's margin past a planned length (preempt --event timer)
IRQ_GAP_MARGIN_S = 20.0      # irq-gap's watchdog past its --duration-s
HOST_GRACE_S = 60.0          # the host waits this long past 1.5 x the planned length


def _option(test: str, options: dict, name: str):
    """The option as the job gives it, else the engine's default (None: no such option)."""
    if name in options:
        return options[name]
    try:
        opt = catalogue().tests.get(test)
        return opt.options[name].default if opt and name in opt.options else None
    except Exception:   # no engine to ask (a profile read without one): no default known
        return None


def planned_seconds(test: str, options: dict) -> float | None:
    """How long the job is planned to measure, or None when its options do not say (a
    count of iterations without a period). An option of the wrong type is the engine's to
    refuse (validate_engine_jobs asks it before anything runs)."""
    try:
        if "cycles" in options and "interval-us" in options:
            seconds = float(options["cycles"]) * interval_us(options) / 1e6
        elif "duration-s" in options:
            seconds = float(options["duration-s"])
        elif test == "preempt" and _option(test, options, "event") == "timer":
            seconds = float(_option(test, options, "iterations")) * float(_option(test, options, "period-us")) / 1e6
        elif test == "timer-sustain":     # every probe at its length (each is bounded at 2x + 0.5 s)
            seconds = float(_option(test, options, "max-probes")) * float(_option(test, options, "probe-s"))
        elif _option(test, options, "duration-s") is not None:
            seconds = float(_option(test, options, "duration-s"))
        else:
            return None
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if 0 <= seconds < 10**9 else None


def bounded_seconds(test: str, options: dict) -> float | None:
    """The planned length, or for a count of iterations without a period its bound at
    ITERATION_CEILING_S an iteration (None: neither known)."""
    planned = planned_seconds(test, options)
    if planned is not None:
        return planned
    try:
        iterations = _option(test, options, "iterations")
        return None if iterations is None else float(iterations) * ITERATION_CEILING_S
    except (TypeError, ValueError, OverflowError):
        return None


def engine_watchdog_s(test: str, options: dict) -> float | None:
    """The engine's watchdog for the job (its --timeout-s, given or derived as the engine
    derives it), or None when the test has none."""
    given = options.get("timeout-s")
    if given is not None:
        try:
            return float(given)
        except (TypeError, ValueError):
            return None
    if test == "preempt" and _option(test, options, "event") == "timer":
        return planned_seconds(test, options) + WATCHDOG_MARGIN_S   # the engine's own rule (preempt.c)
    if test == "irq-gap":
        return planned_seconds(test, options) + IRQ_GAP_MARGIN_S    # the engine's own rule (irq_gap.c)
    default = _option(test, options, "timeout-s")
    return None if default is None else float(default)


def host_deadline_s(job: "Job") -> float:
    """How long rtgauge waits for a tool before it stops it: 1.5 x the planned length plus
    a minute, and always past the engine's watchdog and its 2 s grace, so the engine's own
    stop (which keeps what was measured) comes first."""
    watchdog = engine_watchdog_s(job.test, job.options) if job.tool == "engine" else None
    return max(job.expected_s * 1.5 + HOST_GRACE_S, (watchdog or 0.0) + 2.0 + HOST_GRACE_S / 6)


def expected_seconds(test: str, options: dict) -> float:
    """For the progress bar and the host's deadline: the planned length, else 5 s."""
    planned = planned_seconds(test, options)
    return 5.0 if planned is None else planned


def build_plan(profile: Profile, rounds: int | None = None) -> list[Job]:
    """The jobs in order; rounds (run --rounds) overrides every job's rounds."""
    def rounds_of(spec) -> int:
        return rounds or spec.rounds or getattr(profile, "rounds", 1) or 1

    jobs: list[Job] = []
    for r in range(1, max((rounds_of(spec) for spec in profile.jobs), default=1) + 1):
        for spec in profile.jobs:
            n = rounds_of(spec)
            if r > n:
                continue
            cpus = (parse_cpu_list(check_cpu_list(f"job {spec.name}: cpus", str(spec.options["cpus"])))
                    if "cpus" in spec.options else allowed_cpus())
            seconds = expected_seconds(spec.test, spec.options)
            for condition in spec.conditions:
                base = f"{spec.name}@{condition}"
                jobs.append(Job(base, "engine", spec.test, condition, dict(spec.options), cpus,
                                False, seconds, r if n > 1 else None, n,
                                list(spec.if_available)))
                for tool in spec.cross_check:
                    jobs.append(Job(f"{base}/{tool}", tool, spec.test, condition, dict(spec.options),
                                    cpus, True, seconds, r if n > 1 else None, n))
    return jobs


def drop_cross_check(plan: list[Job], tool: str, note: str) -> None:
    """The plan without `tool`'s cross-checks; the note is stored with each measurement
    one would have checked (env.notes)."""
    crossed = {(j.test, j.condition, j.round) for j in plan if j.tool == tool}
    for j in plan:
        if j.tool == "engine" and (j.test, j.condition, j.round) in crossed:
            j.notes.append(note)
    plan[:] = [j for j in plan if j.tool != tool]


def plan_seconds(jobs: list[Job], warmup_s: float) -> float:
    return sum(j.expected_s + (warmup_s if j.condition != "idle" else 0) for j in jobs)


# ---- sweeps: a kind of plan job -------------------------------------------------------

TIRE_SWEEP, HIL_SUSTAINED = "tire-sweep", "hil-sustained"


@dataclass
class SweepJob:
    """A sweep as a job of the plan: a search (rtgauge/search.py) over one setting whose
    every probe is an engine run, run after the plan's engine jobs by
    plan/execute.py:execute_sweeps. kind "tire-sweep" (a [tire] table: the largest model
    that holds, each probe stored as a `tire` measurement and the limits as one
    "tire-sweep" measurement) or "hil-sustained" ([hil_sustained]: the shortest period
    that holds, stored as one "hil-sustained" measurement)."""
    kind: str
    spec: object      # rtgauge.tire.sweep.SweepSpec or rtgauge.hil.sustained.SustainedSpec

    @property
    def name(self) -> str:
        return self.kind


def sweep_outline(job: SweepJob) -> str:
    """What a sweep will measure, for the run's announcement: its length is not known
    before it runs (it depends on where this system stops holding), so the bounds it
    has are said instead of a guess."""
    spec = job.spec
    if job.kind == TIRE_SWEEP:
        sizes = len(grid_sizes(spec.masses_min, spec.masses_max, spec.grid_ratio))   # the tire model's grid, decided there once
        threads = len(spec.threads) if isinstance(spec.threads, list) else "the published"
        probe_s = spec.steps * spec.period_ms / 1000
        return (f"then the tire sweep: up to {sizes} model sizes x {threads} thread counts x "
                f"{len(spec.policies)} policies, each real-time probe {probe_s:,.0f} s; its length depends on "
                "where this system stops holding (hours at the study's size)")
    return (f"then the HIL sustained-period search: {len(spec.sizes)} payload size(s), each probe "
            f"{spec.frames:,} frames, periods from {spec.start_us:,} us bisected to {spec.precision:.0%}")


def sweep_jobs(profile: Profile) -> list[SweepJob]:
    """The profile's sweeps, in the order they run: the tire sweep, then the HIL one."""
    out = []
    if profile.tire is not None:
        out.append(SweepJob(TIRE_SWEEP, profile.tire))
    if profile.hil_sustained is not None:
        out.append(SweepJob(HIL_SUSTAINED, profile.hil_sustained))
    return out
