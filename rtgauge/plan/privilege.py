"""Real-time privilege, decided before a run stores anything.

A plan whose jobs ask for SCHED_FIFO or SCHED_RR (the engine's default policy, every
cyclictest cross-check, the tire and HIL sweeps) is tried once here: the engine itself
runs its shortest real-time test at the plan's highest priority on one CPU. The engine
decides, not rtgauge's own view of its capabilities, because a `setcap` on the engine's
file or a limits.conf rtprio gives the engine what the Python process may lack.

Refused and not allowed to fall back: `rtgauge run` says in one sentence what was
refused, why and the fix (a container: --cap-add=SYS_NICE / --ulimit rtprio=99; a
user: an rtprio line in limits.conf, or setcap on the engine's real path), exits 2
and stores nothing.

Refused and allowed (`run --allow-fallback`, a profile's settings.allow_fallback):
every engine job carries the engine's --allow-fallback, so it measures as SCHED_OTHER
and records env.fallback (records.Measurement.fallback; every output marks the row);
cyclictest cross-checks are dropped with a note (cyclictest has no fallback); a
sweep, which searches for what holds in real time, is refused."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Callable

from rtgauge.errors import UserError
from rtgauge.plan import Job, drop_cross_check

RT_POLICIES = ("fifo", "rr")
CYCLICTEST_NOTE = ("the cyclictest cross-check was not run: real-time scheduling was refused and "
                   "cyclictest cannot measure without it")


def asked_priority(jobs: list[Job], sweeps: list) -> int | None:
    """The highest real-time priority the plan asks for (None: no job asks for one)."""
    from rtgauge.catalogue import catalogue
    cat = catalogue()
    highest = None
    for job in jobs:
        if job.tool == "rtla":
            continue
        if job.tool == "cyclictest":
            policy, prio = "fifo", job.options.get("priority", 80)
        else:
            info = cat.test(job.test)
            opts = info.options
            policy = job.options.get("policy", opts["policy"].default if "policy" in opts else None)
            prio = job.options.get("priority", opts["priority"].default if "priority" in opts else 1)
        if policy in RT_POLICIES:
            highest = max(highest or 0, int(prio))
    if sweeps:
        highest = max(highest or 0, 80)
    return highest


def try_realtime(priority: int, cpu: int | None) -> str | None:
    """None when the engine may run SCHED_FIFO at PRIORITY here, else the engine's reason."""
    from rtgauge.enginebin import engine_path
    from rtgauge.loads.supervise import die_with_parent
    args = [engine_path(), "overhead", "--iterations", "1000", "--rounds", "1", "--policy", "fifo",
            "--priority", str(priority), "--no-mlock"]
    if cpu is not None:
        args += ["--cpus", str(cpu)]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=60, preexec_fn=die_with_parent())
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the engine could not be tried ({e})"
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    if p.returncode == 0 and doc.get("ok"):
        return None
    why = str(doc.get("error") or p.stderr.strip().removeprefix("rtgauge-engine: ") or f"exit status {p.returncode}")
    return why.split("; ")[0]      # the engine's advice follows; rtgauge gives its own


def refusal(why: str) -> str:
    """The one sentence `rtgauge run` ends with when real-time scheduling is refused."""
    import pwd
    from rtgauge.enginebin import engine_path
    engine = os.path.realpath(engine_path())
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = "USER"
    return (f"{why}, so nothing was measured or stored; in a container, start it with --cap-add=SYS_NICE "
            f"(or --ulimit rtprio=99); as user {user}, add `{user} - rtprio 99` to /etc/security/limits.conf and "
            f"log in again, or run `setcap cap_sys_nice+ep {engine}`; or measure without real-time scheduling "
            "with `rtgauge run --allow-fallback` (every row is then marked fallback and says nothing about real "
            "time).")


def check_realtime(jobs: list[Job], sweeps: list, allow_fallback: bool, say: Callable[[str], None],
                   probe: Callable[[int, int | None], str | None] = try_realtime) -> list[Job]:
    """The plan as it can run here: unchanged when real-time scheduling is allowed;
    refused (UserError, exit 2) when it is not and no fallback is allowed; else with
    every engine job falling back and the cyclictest cross-checks dropped."""
    priority = asked_priority(jobs, sweeps)
    if priority is None:
        return jobs
    cpus = sorted({c for j in jobs for c in j.cpus}) or sorted(os.sched_getaffinity(0))
    why = probe(priority, cpus[0] if cpus else None)
    if why is None:
        return jobs
    if not allow_fallback:
        raise UserError(refusal(why))
    if sweeps:
        raise UserError(f"real-time scheduling was refused ({why}) and the profile's "
                        f"{' and '.join(s.name for s in sweeps)} searches for what holds in real time, which "
                        "cannot be measured without it; grant real-time scheduling (see `rtgauge doctor`) or run "
                        "a profile without [tire] / [hil_sustained].")
    say(f"real-time scheduling was refused ({why}): --allow-fallback measures as SCHED_OTHER, every row is marked "
        "fallback and says nothing about real time; the cyclictest cross-checks are not run.")
    kept = list(jobs)
    if any(j.tool == "cyclictest" for j in kept):
        drop_cross_check(kept, "cyclictest", CYCLICTEST_NOTE)
    for job in kept:
        if job.tool == "engine":
            job.options["allow-fallback"] = True
    return kept
