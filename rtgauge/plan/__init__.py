"""The plan: a profile expanded into the ordered jobs of a run.

Each profile job becomes one engine job per condition and, when it asks for a
cross-check, a cyclictest job on the same settings right after it (same condition,
same CPUs), stored as a reference measurement."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rtgauge.profiles import Profile


@dataclass
class Job:
    name: str                 # "latency@idle", "latency@idle/cyclictest"
    tool: str                 # "engine" | "cyclictest"
    test: str                 # engine test name
    condition: str
    options: dict = field(default_factory=dict)
    cpus: list[int] = field(default_factory=list)
    reference: bool = False   # a cross-check by another tool
    expected_s: float = 5.0   # for the progress bar
    if_available: list[str] = field(default_factory=list)   # flags wanted where the engine can (plan/optional.py)
    notes: list[str] = field(default_factory=list)          # stored with the measurement (env.notes)

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


def parse_cpu_list(text: str) -> list[int]:
    cpus: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def expected_seconds(test: str, options: dict) -> float:
    if "cycles" in options and "interval-us" in options:
        return float(options["cycles"]) * float(options["interval-us"]) / 1e6
    if "duration-s" in options:
        return float(options["duration-s"])
    return 5.0


def build_plan(profile: Profile) -> list[Job]:
    jobs: list[Job] = []
    for spec in profile.jobs:
        cpus = parse_cpu_list(spec.options["cpus"]) if "cpus" in spec.options else allowed_cpus()
        seconds = expected_seconds(spec.test, spec.options)
        for condition in spec.conditions:
            base = f"{spec.name}@{condition}"
            jobs.append(Job(base, "engine", spec.test, condition, dict(spec.options), cpus,
                            False, seconds, list(spec.if_available)))
            for tool in spec.cross_check:
                jobs.append(Job(f"{base}/{tool}", tool, spec.test, condition, dict(spec.options),
                                cpus, True, seconds))
    return jobs


def plan_seconds(jobs: list[Job], warmup_s: float) -> float:
    return sum(j.expected_s + (warmup_s if j.condition != "idle" else 0) for j in jobs)
