"""Real-time privilege, decided before a run stores anything.

A plan whose jobs ask for SCHED_FIFO or SCHED_RR (the engine's default policy, every
cyclictest cross-check, the tire and HIL sweeps; each job's tool adapter says what it asks
for, rtgauge/tools) is tried once here: the engine itself
runs its shortest real-time test at the plan's highest priority on one CPU. The engine
decides, not rtgauge's own view of its capabilities, because a `setcap` on the engine's
file or a limits.conf rtprio gives the engine what the Python process may lack.

Refused and not allowed to fall back: `rtgauge run` says in one sentence what was
refused, why and the fix (a container: --cap-add=SYS_NICE / --ulimit rtprio=99; a
user: an rtprio line in limits.conf, or setcap on the engine's real path), exits 2
and stores nothing.

Refused and allowed (`run --allow-fallback`, a profile's settings.allow_fallback):
every engine job carries the engine's --allow-fallback (its adapter's fallback_option), so
it measures as SCHED_OTHER and records env.fallback (records.Measurement.fallback; every
output marks the row); the cross-checks of a tool that asks for real time and has no
fallback (cyclictest) are dropped with a note; a sweep, which searches for what holds in
real time, is refused."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from typing import Callable

from rtgauge import tools
from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.loads.supervise import die_with_parent
from rtgauge.plan import Job, drop_cross_check


def no_realtime_note(adapter) -> str:
    """The note stored with a measurement whose cross-check was dropped for want of real time."""
    return (f"the {adapter.title} cross-check was not run: real-time scheduling was refused and "
            f"{adapter.title} cannot measure without it")


def without_fallback() -> list:
    """The cross-check tools (their adapters) that ask for real time and cannot measure without it."""
    return [a for a in tools.cross_checks() if a.realtime_priority is not None and a.fallback_option is None]


def asked_priority(jobs: list[Job], sweeps: list) -> int | None:
    """The highest real-time priority the plan asks for (None: no job asks for one); each
    job's tool says what it asks for (its adapter's realtime_priority)."""
    highest = None
    for job in jobs:
        ask = tools.adapter_of(job.tool).realtime_priority
        prio = ask(job) if ask is not None else None
        if prio is not None:
            highest = max(highest or 0, prio)
    if sweeps:
        highest = max(highest or 0, 80)
    return highest


def try_realtime(priority: int, cpu: int | None) -> str | None:
    """None when the engine may run SCHED_FIFO at PRIORITY here, else the engine's reason."""
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
    every job falling back (its tool's fallback_option) and the cross-checks that cannot
    (without_fallback) dropped."""
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
    dropped = without_fallback()
    names = " and ".join(a.title for a in dropped)
    say(f"real-time scheduling was refused ({why}): --allow-fallback measures as SCHED_OTHER, every row is marked "
        "fallback and says nothing about real time" + (f"; the {names} cross-checks are not run." if names else "."))
    kept = list(jobs)
    for adapter in dropped:
        if any(j.tool == adapter.name for j in kept):
            drop_cross_check(kept, adapter.name, no_realtime_note(adapter))
    for job in kept:
        option = tools.adapter_of(job.tool).fallback_option
        if option:
            job.options[option] = True
    return kept
