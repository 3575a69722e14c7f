"""Options a profile wants where the engine can give them (a job's `if_available`).

The interrupt study splits its wake-up latency into the interrupt and scheduling
parts (`latency --split`), which needs root, tracefs and an engine built with
libtracefs. A profile that asks for it with `if_available = ["split"]` still runs
where the split cannot be had: before the run, each wanted flag is tried once with
a short run of the job's test on the job's CPUs; where the engine refuses it, the
flag is left out and the engine's reason is kept as a note stored with every
measurement of the job (`env.notes`) and said at the start of the run.

The split mounts tracefs where it is missing (root; as rtla does) unless
`mount_tracefs` is false (`run --no-mount-tracefs`): then the trial and the job carry
the engine's --no-mount-tracefs. When the trial mounted it, the engine's note saying
so goes with every measurement of the job, like the reasons above."""

from __future__ import annotations

import json
import subprocess
from typing import Callable

from rtgauge.catalogue import LATENCY, catalogue
from rtgauge.enginebin import engine_path
from rtgauge.loads.supervise import die_with_parent
from rtgauge.plan import Job

# The short run that tries a flag, per kind of test that may take one (the flag decides, not the policy).
TRIAL_ARGS = {LATENCY: ["--duration-s", "0.05", "--allow-fallback"]}
# (IF_AVAILABLE_KINDS, which profiles accept, names the same kinds)


# Options that go with a wanted flag when it is used: (flag, mount_tracefs) -> options
def companions(flag: str, mount_tracefs: bool) -> list[str]:
    return ["no-mount-tracefs"] if flag == "split" and not mount_tracefs else []


def try_flag(test: str, flag: str, cpus: list[int], mount_tracefs: bool = True) -> tuple[str | None, list[str]]:
    """(None, the engine's notes) when the engine runs TEST with --FLAG here, else (its reason, [])."""
    extra = [f"--{c}" for c in companions(flag, mount_tracefs)]
    args = [engine_path(), test, f"--{flag}", *extra, *TRIAL_ARGS[catalogue().kind_of(test)]]
    if cpus:
        args += ["--cpus", ",".join(map(str, cpus[:1]))]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=30, preexec_fn=die_with_parent())   # dies with rtgauge
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the engine could not be tried with --{flag} ({e})", []
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    if p.returncode == 0 and doc.get("ok"):
        notes = (doc.get("env") or {}).get("notes") or []
        return None, [str(n) for n in notes]
    return str(doc.get("error") or p.stderr.strip() or f"exit status {p.returncode}"), []


def resolve_optional(jobs: list[Job], say: Callable[[str], None], mount_tracefs: bool = True) -> list[Job]:
    """Each engine job's wanted flags: on where the engine can, else left out with a note."""
    tried: dict[tuple, tuple[str | None, list[str]]] = {}
    for job in jobs:
        for flag in job.if_available:
            if job.tool != "engine":
                continue
            key = (job.test, flag, tuple(job.cpus[:1]))
            if key not in tried:
                tried[key] = try_flag(job.test, flag, job.cpus, mount_tracefs)
                why, notes = tried[key]
                if why:
                    say(f"--{flag} is unavailable here, so {job.test} jobs run without it: {why}")
                for note in notes:
                    say(note)
            why, notes = tried[key]
            if why is None:
                job.options[flag] = True
                for c in companions(flag, mount_tracefs):
                    job.options[c] = True
                job.notes.extend(n for n in notes if n not in job.notes)
            else:
                job.notes.append(f"--{flag} left out (unavailable here): {why}")
    return jobs
