"""A profile's jobs planned and checked for `rtgauge run`, before anything is stored
(the lifecycle's prepare and check stages, rtgauge/plan/lifecycle.py): the plan with the
run's overrides; the files its engine jobs write; its load conditions here or on the
target; its cross-checks' tools (each asked through its adapter, rtgauge/tools); the
engine's optional flags and its own acceptance of every job's options; and the real-time
privilege (plan/privilege.py)."""

from __future__ import annotations

import subprocess

from rtgauge import safefile
from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.loads import LoadContext, make_load
from rtgauge.plan import Job, build_plan, drop_cross_check, sweep_jobs
from rtgauge.plan.execute import apply_overrides
from rtgauge.plan.optional import resolve_optional
from rtgauge.plan.privilege import check_realtime
from rtgauge.remote.loads import tools_for
from rtgauge.report.safe import markup
from rtgauge.tools import adapter_of

# the engine options that name a file it writes (engine/src/output.h)
ENGINE_OUTPUTS = ("samples", "status", "out")


def plan_jobs(profile, request, conditions) -> list[Job]:
    """The profile's jobs with the run's overrides: --rounds, --duration and --rt-cpus."""
    jobs = build_plan(profile, request.rounds)
    apply_overrides(jobs, conditions.duration_s, conditions.partition.rt_cpus if conditions.partition else None)
    return jobs


def check_jobs(console, profile, jobs: list[Job], request, conditions, address: str | None = None) -> list[Job]:
    """The profile's jobs as they can run: their outputs (here) or their load conditions
    (on a target), the cross-checks whose tool is missing here dropped with a note, the
    loads' programs, the engine's optional flags and its --dry-run of every job, then the
    real-time privilege (here; a target's login is checked when connecting)."""
    if address:     # cross-checks are looked for on the target once connected
        check_target_conditions(jobs, address, conditions.allow_netns)
    else:
        check_job_outputs(jobs)
    for tool in dict.fromkeys(j.tool for j in jobs if j.cross_check and not address):   # a target's: once connected
        adapter = adapter_of(tool)
        if why := adapter.unavailable_here():
            drop_cross_check(jobs, tool, f"the {adapter.title} cross-check was not run: {why}")
            console.print(f"[yellow]{markup(why)}: the {markup(adapter.title)} cross-check is skipped.[/]")
    if not address:     # a target's loads are checked there once connected
        check_loads(jobs)
    resolve_optional(jobs, lambda text: console.print(f"[yellow]{markup(text)}[/]"),
                     mount_tracefs=request.mount_tracefs)
    validate_engine_jobs(jobs)
    if not address:     # bad input first, then the privilege
        jobs = check_realtime(jobs, sweep_jobs(profile), bool(request.allow_fallback or profile.allow_fallback),
                              lambda text: console.print(f"[yellow]{markup(text)}[/]"))
    return jobs


def prepare_jobs(console, profile, request, conditions, address: str | None = None) -> list[Job]:
    """One profile's jobs planned (plan_jobs) and checked (check_jobs), as a run's first
    two stages take them, for a caller that needs one profile's plan alone."""
    return check_jobs(console, profile, plan_jobs(profile, request, conditions), request, conditions, address)


def validate_engine_jobs(jobs: list[Job]) -> None:
    """Check every engine job's options with the engine itself (--dry-run) before
    anything is stored, so a bad profile stores nothing."""
    exe = engine_path()
    seen = set()
    for job in jobs:
        if job.tool != "engine":
            continue
        key = (job.test, tuple(job.engine_args()))
        if key in seen:
            continue
        seen.add(key)
        p = subprocess.run([exe, job.test, "--dry-run", *job.engine_args()], capture_output=True,
                           text=True, timeout=30)
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines()
            why = lines[-1].removeprefix("rtgauge-engine: ") if lines else f"exit status {p.returncode}"
            raise UserError(f"job {job.name}: {why}")


def check_loads(jobs: list[Job]) -> None:
    """Each job's load can start here (check_jobs has dropped the cross-checks whose
    tool is missing already)."""
    for job in jobs:
        make_load(job.condition).check()   # raises the missing-package sentence


def check_job_outputs(jobs: list[Job]) -> None:
    """A profile's `samples = PATH` (or another file an engine job writes) by the one
    writer's rule, before anything is measured: the engine would refuse it only when the
    job starts (engine/src/output.c), leaving a failed measurement."""
    for job in jobs:
        if job.tool != "engine":
            continue
        for key in ENGINE_OUTPUTS:
            value = job.options.get(key)
            if not isinstance(value, str) or value.startswith("fd:"):
                continue
            if safefile.stream_fd(value) is not None:      # the engine's streams are rtgauge's, not the profile's
                raise UserError(f"job {job.name}: {key} = {value[:80]} names a stream the engine's output does not "
                                "reach; give a regular file path in the profile.")
            safefile.check_option(f"job {job.name}: {key} =", value, "give a regular file path in the profile")


def target_address(target: str | None, profiles) -> str | None:
    """The machine to measure: --target, else the first profile's target; None: here."""
    address = target if target is not None else profiles[0].target
    if address in (None, "", "local"):
        return None
    from rtgauge.remote.ssh import parse      # asyncssh, the ssh extra: only when a target is named
    return str(parse(address))


def check_target_run(address: str, request, profiles) -> None:
    """What a run on a target cannot do yet, refused before anything is stored."""
    r = request
    for flag, given in (("--rt-throttling-off", r.rt_throttling_off), ("--load-dir", r.load_dir),
                        ("--rt-cpus", r.rt_cpus), ("--load-cpus", r.load_cpus),
                        ("--housekeeping-cpus", r.housekeeping_cpus), ("--live", r.live),
                        ("--metrics-file", r.metrics_file),
                        ("--trace-threshold-us", r.trace_threshold_us is not None),
                        ("--attribute", r.attribute or profiles[0].attribute)):
        if given:
            raise UserError(f"{flag} cannot run on {address} yet; drop it, or run rtgauge on the board itself.")
    for p in profiles:
        if p.tire is not None or p.hil_sustained is not None:
            raise UserError(f"profile {p.origin} has a [tire] or [hil_sustained] table, which cannot run on "
                            f"{address} yet; run it here or on the board itself.")


def check_target_conditions(jobs: list[Job], address: str, allow_netns: bool = False) -> None:
    """A condition that can never run on a target (ping-tcp, net with --allow-netns)
    is refused before connecting; the tools the others need are looked for there."""
    for job in jobs:
        tools_for(job.condition, LoadContext(allow_netns=allow_netns))


def fit_cross_checks_to_target(console, plans: list[list[Job]], session, cpus: int | None) -> None:
    """Each cross-check (its tool's adapter, rtgauge/tools) runs on the target when the
    target can run it (on the target's CPUs unless the job names them), else it is
    skipped with a note."""
    for tool in dict.fromkeys(j.tool for plan in plans for j in plan if j.cross_check):
        adapter = adapter_of(tool)
        why = adapter.unavailable_on(session)
        if why:
            note = f"{session.address} {why}: the {adapter.title} cross-check was not run there"
            console.print(f"[yellow]{markup(note)}.[/]")
            for plan in plans:
                drop_cross_check(plan, tool, note)
            continue
        for job in (j for plan in plans for j in plan):
            if job.tool == tool and "cpus" not in job.options and cpus:
                job.cpus = list(range(cpus))
