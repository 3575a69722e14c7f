"""`rtgauge run`: run a profile's plan, store each job as it ends, print a summary
and write the report."""

from __future__ import annotations

import argparse

import sys


from dataclasses import replace

from rtgauge.cli.common import (add_budget_options, add_db_option, add_format_option, check_report_path,
                                check_writable, tell_abandoned)
from rtgauge.enginebin import engine_path
from rtgauge.units import time_option
from rtgauge.errors import EXIT_FAILED, UserError


def register(sub) -> None:
    import argparse
    from rtgauge.errors import EXIT_HELP
    p = sub.add_parser("run", help="measure this system with a profile and store the results",
                       description="Measure this system with a profile, store every job as it ends, print a "
                       "summary and write the report. With a budget, answer whether the system can carry the "
                       "job (yes / no / not enough evidence) and exit with that answer's status; with --fail-on, "
                       "gate the run on absolute rules (docs/verdict.md, docs/ci.md).",
                       epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("what to measure")
    g.add_argument("--profile", default=None,
                   help="quick (about 3 min), standard (about 25 min), micro, hil, a published study "
                   "(tire-study, interrupt-study, rtos-evaluation, cyclictest-study, each also NAME-quick; "
                   "docs/studies.md) or a TOML file (default: $RTGAUGE_PROFILE, else the config file's profile, else quick)")
    g.add_argument("--duration", metavar="TIME", help="length of every latency job, e.g. 90s, 10m, 24h")
    g.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="run every job N times, each round a separate engine run, so that `rtgauge compare` "
                   "knows each figure's noise (default: the profile's rounds, usually 1)")
    g.add_argument("--interleave", metavar="PROFILE", default=None,
                   help="also measure this profile (it may be the same one), stored as a second run, its rounds "
                   "interleaved with the first's: the fair way to compare two settings on one machine")
    g.add_argument("--target", default=None, metavar="ssh://[user@]host[:port]",
                   help="measure that machine over SSH instead of this one (an engine built for it runs there; "
                   "documents are stored here; docs/cross.md); default: the profile's target, else here")
    g.add_argument("--rt-cpus", metavar="CPUS", help="CPUs that measure (becomes the engine's --cpus)")
    g.add_argument("--load-cpus", metavar="CPUS", help="CPUs the load runs on (default: the others)")
    g.add_argument("--attribute", action="store_true",
                   help="trace the measured CPUs for the whole latency job and name what delayed every wake-up "
                        "above the attribution threshold (docs/attribution.md; root and tracefs; default: the "
                        "profile's settings.attribute)")
    g.add_argument("--tuned", action="store_true",
                   help="apply `rtgauge tune` for the run and revert it after, also on failure")
    add_verdict_options(p)
    g = p.add_argument_group("output")
    g.add_argument("--report", default=None, metavar="FILE",
                   help="HTML report to write at the end (default: rtgauge-run-N.html here)")
    g.add_argument("--no-report", action="store_true", help="do not write an HTML report")
    g.add_argument("--json", action="store_true",
                   help="print the stored run as `rtgauge show RUN --json` gives it on standard output; "
                   "progress, warnings and the summary go to standard error")
    add_format_option(g)
    g.add_argument("--live", action="store_true",
                   help="show per CPU the max so far and the last window's max and p99, and the misses, while a "
                        "latency job runs (from the engine's status: a line a window, docs/samples.md)")
    g.add_argument("--metrics-file", metavar="PATH",
                   help="keep the same figures in PATH as a Prometheus text exposition, rewritten atomically at "
                        "each window (for node_exporter's textfile collector in long soaks; not a symbolic link)")
    g = p.add_argument_group("database")
    add_db_option(g)
    g.add_argument("--segment", metavar="TIME", default="10m",
                   help="store a long latency job in segments of this length (default 10m), so a run "
                        "that dies keeps what it measured")
    g.add_argument("--run-id-file", default=None, metavar="FILE",
                   help="write the id of each run stored (one a line) to FILE as soon as it is begun: for a "
                   "program that starts `rtgauge run` (`rtgauge lab` does) instead of reading its console")
    add_advanced_options(p)
    p.set_defaults(func=cmd_run)


def add_verdict_options(p) -> None:
    """The job's budget, the verdict against it, and CI gates (docs/verdict.md, docs/ci.md)."""
    g = p.add_argument_group("the job's budget: a verdict against it; CI gates")
    add_budget_options(g, "the worst wake-up latency the job tolerates, µs; gives a verdict (yes / no / not enough "
                       "evidence) and its exit status (default: the profile's [budget], else the config file's)",
                       "the job's period, µs (with a budget)",
                       "the share of cycles allowed later than the budget, e.g. 1e-6 (default: none, hard)")
    g.add_argument("--until-verdict", action="store_true",
                   help="with a budget: repeat the latency jobs, round after round, until the verdict is yes "
                   "or no, or --max-time has passed")
    g.add_argument("--max-time", metavar="TIME", default="1h",
                   help="with --until-verdict: the ceiling on the whole run, e.g. 30m, 4h (default 1h)")
    g.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="an absolute rule checked on every job of this run, e.g. 'max_latency>100us', "
                   "'misses>0', 'p99_latency>50us', 'pwcet>200us' (the credible worst case; undecided without "
                   "one); repeatable; exit status 3 when one is broken")
    g.add_argument("--junit", metavar="FILE", help="write the rules' and the verdict's outcome as JUnit XML "
                   "(one test case per job and rule)")


def add_advanced_options(p) -> None:
    """Partitioning details, loads, tuning and tracing (docs/loads.md, docs/attribution.md)."""
    g = p.add_argument_group("advanced")
    g.add_argument("--housekeeping-cpus", metavar="CPUS",
                   help="CPUs for rtgauge itself and the engine's collector (default: neither rt nor load)")
    g.add_argument("--load-dir", metavar="DIR", help="directory the io load writes to (default: the database's)")
    g.add_argument("--allow-netns", action="store_true",
                   help="the net load may create two network namespaces joined by a veth pair")
    g.add_argument("--allow-fallback", action="store_true",
                   help="where real-time scheduling is refused (no CAP_SYS_NICE, no rtprio limit), measure as "
                        "SCHED_OTHER instead of refusing; every row is marked fallback, says nothing about real "
                        "time and is not rated (default: the profile's settings.allow_fallback)")
    g.add_argument("--resume", type=int, metavar="RUN", default=None,
                   help="measure on run RUN (interrupted, abandoned or failed) with its own profile, on the same "
                        "machine: jobs stored whole are kept, the others measured again, a sweep's stored probes "
                        "replayed (docs/studies.md); give the run's other options again")
    g.add_argument("--rt-throttling-off", action="store_true",
                   help="with --tuned: also switch RT throttling off, restored by a watchdog at the "
                        "run's expected end plus a margin even if rtgauge dies")
    g.add_argument("--trace-threshold-us", type=time_option("us"), metavar="N",
                   help="trace the measured CPUs and stop a latency job at its first wake-up later than N µs, "
                        "storing the end of the trace")
    g.add_argument("--attribute-threshold-us", type=time_option("us"), metavar="N",
                   help="with --attribute: the wake-ups later than N µs are attributed (default: the profile's "
                        "settings.attribute_threshold_us, else the run's p99.9); implies --attribute")
    g.add_argument("--mount-tracefs", action=argparse.BooleanOptionalAction, default=True,
                   help="mount tracefs at /sys/kernel/tracing when the split or the trace needs it and it is "
                        "not mounted (root; left mounted, as rtla does); --no-mount-tracefs refuses instead "
                        "(default: mount)")


class ProgressView:
    """One bar for the whole plan, advanced by elapsed time within each job."""

    def __init__(self, console: Console, jobs: list[Job], warmup_s: float):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rtgauge.plan import Job, plan_seconds

        class WithLiveTable(Progress):
            below = None           # the live table (run --live), under the bar

            def get_renderables(self):
                yield from super().get_renderables()
                if self.below is not None:
                    yield self.below
        self.progress = WithLiveTable(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                      TextColumn("left"), TimeRemainingColumn(), console=console,
                                      refresh_per_second=2, transient=False)
        self.total = plan_seconds(jobs, warmup_s)
        self.done = 0.0
        self.current: Job | None = None
        self.task = self.progress.add_task("starting", total=self.total)

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def start_job(self, job: Job) -> None:
        from rtgauge.report.safe import markup
        self.current = job
        self.progress.update(self.task, description=f"{markup(job.label, 64):<32}", completed=self.done)

    def tick(self, elapsed: float) -> None:
        self.progress.update(self.task, completed=self.done + min(elapsed, self.current.expected_s))

    def live(self, table) -> None:
        """Show `table` (trace/live.py: per job and CPU) under the bar until the next one."""
        self.progress.below = table

    def end_job(self, job: Job, doc: dict) -> None:
        self.done += job.expected_s
        state = "ok" if doc.get("ok") else f"failed: {doc.get('error')}"
        self.progress.console.print(f"  {job.label}: {state}", markup=False)
        self.progress.update(self.task, completed=self.done)


def validate_engine_jobs(jobs: list[Job]) -> None:
    """Check every engine job's options with the engine itself (--dry-run) before
    anything is stored, so a bad profile stores nothing."""
    import subprocess
    from rtgauge.enginebin import engine_path
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
    """Each job's load can start here (prepare_jobs has dropped the cross-checks
    whose tool is missing already)."""
    from rtgauge.loads import make_load

    for job in jobs:
        make_load(job.condition).check()   # raises the missing-package sentence


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


def prepare_jobs(console: Console, profile, args, conditions, address: str | None = None) -> list[Job]:
    from rtgauge.plan.execute import apply_overrides
    from rtgauge.plan import build_plan, drop_cross_check
    from rtgauge.report.safe import markup
    jobs = build_plan(profile, args.rounds)
    apply_overrides(jobs, conditions.duration_s, conditions.partition.rt_cpus if conditions.partition else None)
    if address:     # cross-checks are looked for on the target once connected
        check_target_conditions(jobs, address, conditions.allow_netns)
    else:
        check_job_outputs(jobs)
    # cross-checks need their tool; drop them with a note when it is missing
    from rtgauge.tools import adapter_of
    for tool in dict.fromkeys(j.tool for j in jobs if j.cross_check and not address):   # a target's: once connected
        adapter = adapter_of(tool)
        if why := adapter.unavailable_here():
            drop_cross_check(jobs, tool, f"the {adapter.title} cross-check was not run: {why}")
            console.print(f"[yellow]{markup(why)}: the {markup(adapter.title)} cross-check is skipped.[/]")
    if not address:     # a target's loads are checked there once connected
        check_loads(jobs)
    from rtgauge.plan.optional import resolve_optional
    resolve_optional(jobs, lambda text: console.print(f"[yellow]{markup(text)}[/]"),
                     mount_tracefs=getattr(args, "mount_tracefs", True))
    validate_engine_jobs(jobs)
    if not address:     # bad input first, then the privilege; a target's login is checked when connecting
        from rtgauge.plan import sweep_jobs
        from rtgauge.plan.privilege import check_realtime
        jobs = check_realtime(jobs, sweep_jobs(profile),
                              bool(getattr(args, "allow_fallback", False) or profile.allow_fallback),
                              lambda text: console.print(f"[yellow]{markup(text)}[/]"))
    return jobs


def target_address(args, profiles) -> str | None:
    address = args.target if args.target is not None else profiles[0].target
    if address in (None, "", "local"):
        return None
    from rtgauge.remote.ssh import parse
    return str(parse(address))


def check_target_run(address: str, args, profiles) -> None:
    """What a run on a target cannot do yet, refused before anything is stored."""
    for flag, given in (("--rt-throttling-off", args.rt_throttling_off), ("--load-dir", args.load_dir),
                        ("--rt-cpus", args.rt_cpus), ("--load-cpus", args.load_cpus),
                        ("--housekeeping-cpus", args.housekeeping_cpus), ("--live", args.live),
                        ("--metrics-file", args.metrics_file),
                        ("--trace-threshold-us", args.trace_threshold_us is not None),
                        ("--attribute", getattr(args, "attribute", False) or profiles[0].attribute)):
        if given:
            raise UserError(f"{flag} cannot run on {address} yet; drop it, or run rtgauge on the board itself.")
    for p in profiles:
        if p.tire is not None or p.hil_sustained is not None:
            raise UserError(f"profile {p.origin} has a [tire] or [hil_sustained] table, which cannot run on "
                            f"{address} yet; run it here or on the board itself.")


# the engine options that name a file it writes (engine/src/output.h)
ENGINE_OUTPUTS = ("samples", "status", "out")


def check_job_outputs(jobs: list[Job]) -> None:
    """A profile's `samples = PATH` (or another file an engine job writes) by the one
    writer's rule, before anything is measured: the engine would refuse it only when the
    job starts (engine/src/output.c), leaving a failed measurement."""
    from rtgauge import safefile
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


def check_target_conditions(jobs: list[Job], address: str, allow_netns: bool = False) -> None:
    """A condition that can never run on a target (ping-tcp, net with --allow-netns)
    is refused before connecting; the tools the others need are looked for there."""
    from rtgauge.loads import LoadContext
    from rtgauge.remote.loads import tools_for
    for job in jobs:
        tools_for(job.condition, LoadContext(allow_netns=allow_netns))


def fit_cross_checks_to_target(console: Console, plans: list[list[Job]], session, cpus: int | None) -> None:
    """Each cross-check (its tool's adapter, rtgauge/tools) runs on the target when the
    target can run it (on the target's CPUs unless the job names them), else it is
    skipped with a note."""
    from rtgauge.report.safe import markup
    from rtgauge.plan import drop_cross_check
    from rtgauge.tools import adapter_of
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


def execute_interleaved(store, run_ids: list[int], plans: list[list[Job]], warmup_s: float, view, settings):
    """Round 1 of every run, then round 2, ...: a change of the machine during the
    measurement falls on every run alike. Returns (status, outcomes per run)."""
    from rtgauge.plan.execute import execute
    outcomes: list[list] = [[] for _ in run_ids]
    last = max((j.round or 1 for jobs in plans for j in jobs), default=1)
    for r in range(1, last + 1):
        for i, (run_id, jobs) in enumerate(zip(run_ids, plans)):
            batch = [j for j in jobs if (j.round or 1) == r]
            if not batch:
                continue
            status, done = execute(store, run_id, batch, warmup_s, view, settings)
            outcomes[i] += done
            if status != "complete":
                return status, outcomes
    return "complete", outcomes


def cmd_run(args) -> int:
    from rtgauge.profiles import MAX_ROUNDS, load_profile, valid_rounds
    from rtgauge.plan.session import RunConditions
    from rtgauge.sysinfo import collect_facts, run_doctor

    # with --json, standard output carries the run's document only: the rest goes to stderr
    from rtgauge.report.safe import table_console
    console = table_console(args.format, stderr=args.json)
    import signal
    # SIGTERM before the measurement's own handling starts ends the command as Ctrl-C does
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    check_report_path(args)
    from rtgauge.loads.supervise import remove_stale_workdirs
    remove_stale_workdirs()
    if args.rounds is not None and not valid_rounds(args.rounds):
        raise UserError(f"--rounds {args.rounds} is out of range; give a whole number from 1 to {MAX_ROUNDS}.")
    from rtgauge.config import default_profile
    if getattr(args, "resume", None) is not None:
        profiles = [resumed_profile(args)]
    else:
        args.profile = default_profile(args.profile) or "quick"
        profiles = [load_profile(args.profile)]
    if args.interleave:
        profiles.append(load_profile(args.interleave))
        for p in profiles:
            if p.tire is not None or p.hil_sustained is not None:
                raise UserError(f"--interleave measures profiles of [[jobs]] only; profile {p.origin} has a "
                                "[tire] or [hil_sustained] table, run it alone.")
    profile = profiles[0]
    prepare_gates(args, profile)
    address = target_address(args, profiles)
    if address:
        check_target_run(address, args, profiles)
    conditions = RunConditions(
        profile.warmup_s, duration=args.duration, segment=args.segment, rt_cpus=args.rt_cpus,
        load_cpus=args.load_cpus, housekeeping_cpus=args.housekeeping_cpus,
        trace_threshold_us=args.trace_threshold_us, attribute=args.attribute,
        attribute_threshold_us=args.attribute_threshold_us, load_dir=args.load_dir, allow_netns=args.allow_netns,
        tuned=args.tuned, rt_throttling_off=args.rt_throttling_off, live=args.live,
        metrics_file=args.metrics_file,
        mount_tracefs=args.mount_tracefs, profile=profile)
    plans = [prepare_jobs(console, p, args, conditions, address) for p in profiles]
    jobs = [j for plan in plans for j in plan]
    if address:
        from rtgauge.remote.session import TargetSession
        console.print(f"Connecting to {address} ...", markup=False)
        session = TargetSession(address).__enter__()    # refuses an unreachable, unauthenticated or
        try:                                            # unprivileged target before anything is stored
            from rtgauge.loads import LoadContext
            from rtgauge.remote.loads import check_on_target
            check_on_target([j.condition for j in jobs], session, LoadContext(allow_netns=conditions.allow_netns))
            facts = session.facts()
            checks = [{"name": "target", "status": "info", "value": f"measured on {address} "
                       f"({facts.get('hostname')}, {facts.get('arch')}, Linux {facts.get('kernel_release')})",
                       "advice": "the checks below read the target's /proc and /sys over the connection"}]
            checks += run_doctor(facts)
            conditions.target = session
            console.print(f"Target {address}: {facts.get('hostname')}, {facts.get('arch')}, "
                          f"kernel {facts.get('kernel_release')}", markup=False)
            fit_cross_checks_to_target(console, plans, session, facts.get("cpus"))
            jobs = [j for plan in plans for j in plan]
            return run_measured(console, args, profiles, plans, jobs, conditions, facts, checks, session)
        finally:
            session.close()
    facts = collect_facts()
    checks = run_doctor(facts)
    return run_measured(console, args, profiles, plans, jobs, conditions, facts, checks, None)


def resumed_profile(args):
    """The profile of the run --resume names (its stored TOML text); refusals in one sentence."""
    from rtgauge.profiles import parse_profile
    from rtgauge.store import open_store
    if args.profile or args.interleave:
        raise UserError("--resume measures the run's own profile; leave out --profile and --interleave.")
    if args.resume < 1:
        raise UserError(f"--resume {args.resume}: give a run's id (a whole number from 1), as `rtgauge show` lists.")
    store = open_store(args.db)
    try:
        run = store.get_run(args.resume, documents=False)
    finally:
        store.close()
    if run is None:
        raise UserError(f"there is no run {args.resume} to resume in this database; `rtgauge show` lists the runs.")
    source = str(run.extra.get("profile_source") or "")
    if not source.strip():
        raise UserError(f"run {args.resume} has no stored profile to resume.")
    args.profile = run.profile
    return parse_profile(source, f"run {args.resume}'s profile ({run.profile})")


def resolve_budget(args, profile):
    """The job's budget: each value from the command line, else the profile's [budget],
    else the config file's; None when no latency is given anywhere."""
    from rtgauge.analysis.run.verdict import make_budget
    given = {"latency_us": args.budget_us, "period_us": args.period_us, "miss_rate": args.miss_rate}
    prof = profile.budget.to_json() if profile.budget is not None else {}
    from rtgauge.config import budget_table
    conf = budget_table()
    values, sources = {}, []
    for key, value in given.items():
        for where, table in (("command line", given), (f"profile {profile.name}", prof), ("config file", conf)):
            if table.get(key) is not None:
                values[key] = table[key]
                if where not in sources:
                    sources.append(where)
                break
    source = " and ".join(sources) or "none"
    return make_budget(values.get("latency_us"), values.get("period_us"), values.get("miss_rate"), source)


def prepare_gates(args, profile) -> None:
    """Rules, budget and JUnit path checked before anything is measured (args.rules,
    args.budget, args.max_time_s)."""
    from rtgauge.analysis.compare.gate import parse_run_rule
    from rtgauge.plan.execute import parse_duration
    from rtgauge.report.junit import check_path
    args.rules = [parse_run_rule(r) for r in args.fail_on]
    args.budget = resolve_budget(args, profile)
    check_path(args.junit)
    # every file the run writes, by the one writer's rule (rtgauge/safefile.py), before it measures
    check_writable("--run-id-file", getattr(args, "run_id_file", None))
    args.max_time_s = None
    if args.until_verdict:
        if args.budget is None:
            raise UserError("--until-verdict measures until the verdict against a budget is decided; give "
                            "--budget-us (or a [budget] in the profile or the config file).")
        if args.interleave:
            raise UserError("--until-verdict measures one profile; leave out --interleave.")
        args.max_time_s = parse_duration(args.max_time)


def until_verdict(console, store, run_id: int, jobs: list[Job], warmup_s: float, view, settings, args,
                  started: float, clock=None) -> str:
    """Repeat the latency jobs as further rounds until the verdict is decided or the
    ceiling (--max-time) would be passed by one more round. Returns the status. The time
    taken is clock.monotonic() - started (clock: rtgauge/clock.py, the system's if None)."""
    from rtgauge.clock import SYSTEM
    from rtgauge.analysis.run.verdict import UNDECIDED, judge
    from rtgauge.plan import plan_seconds
    from rtgauge.plan.execute import execute
    latency = [j for j in jobs if j.tool == "cyclictest" or j.test == "latency"]
    if not latency:
        return "complete"
    one_round = plan_seconds(latency, warmup_s)
    r = max((j.round or 1) for j in jobs)
    while True:
        v = judge(store.get_run(run_id, documents=False), args.budget)
        if v.answer != UNDECIDED:
            return "complete"
        if (clock or SYSTEM).monotonic() - started + one_round > args.max_time_s:
            console.print(f"--until-verdict: still undecided; another round ({one_round:.0f} s) would pass "
                          f"--max-time {args.max_time}.", markup=False)
            return "complete"
        r += 1
        console.print(f"--until-verdict: undecided, measuring round {r} of the latency jobs.", markup=False)
        extra = [replace(j, round=r, rounds=r, notes=list(j.notes))
                 for j in latency]
        view.total += one_round
        view.progress.update(view.task, total=view.total)
        status, _ = execute(store, run_id, extra, warmup_s, view, settings)
        if status != "complete":
            return status


def gate_outcome(console, args, runs) -> int:
    """The verdict and the --fail-on rules on the run: printed, written as JUnit, and
    their exit status (0 when there is no gate)."""
    from rtgauge.analysis.compare.gate import check_run
    from rtgauge.analysis.run.verdict import judge
    from rtgauge.errors import gate_status
    from rtgauge.analysis.compare.gate import incomplete_runs
    from rtgauge.report.junit import Case, Suite, fail_closed, verdict_cases, write_junit
    from rtgauge.report.safe import markup as esc
    run = runs[0]
    statuses, cases = [], []
    if args.budget is not None:
        v = judge(run, args.budget)
        statuses.append(v.exit_status)
        cases += verdict_cases(v, run.id)
    checks = check_run(run, args.rules)
    for c in checks:
        statuses.append(c.exit_status)
        cases.append(Case(f"run {run.id}.{c.job}", c.rule, c.outcome, c.message))
        colour = {"pass": "green", "fail": "red"}.get(c.outcome, "yellow")
        console.print(f"--fail-on {esc(c.rule)}: {esc(c.job)}: [{colour}]{c.outcome}[/] — {esc(c.message)}")
    if args.junit:
        # the JUnit file says what the exit status says: an interrupted run (130) or one with
        # a measurement stopped early passes nothing
        suite = fail_closed(Suite(f"rtgauge run {run.id}", cases, run.started_at), incomplete_runs([run]),
                            f"run {run.id}")
        write_junit(args.junit, [suite])
        console.print(f"JUnit: {args.junit}", markup=False)
    return gate_status(statuses)


def write_run_ids(path: str, run_ids: list[int]) -> None:
    """--run-id-file: the runs' ids, one a line (rtgauge/lab/runner.py reads them)."""
    from rtgauge import safefile
    from rtgauge.printable import printable
    try:
        safefile.write_text(path, "".join(f"{rid}\n" for rid in run_ids))
    except BrokenPipeError:
        raise
    except OSError as e:
        raise UserError(f"cannot write the run id to --run-id-file {printable(path, 120)} ({safefile.reason(e)}); "
                        "give a regular file path.") from None


def same_machine(store, run_id: int, facts: dict) -> bool:
    """Whether another run measures the machine this one measures (a lab measures
    many boards at once from here, each run on its own target)."""
    other = store.get_run(run_id, documents=False)
    return other is None or (other.system.get("target") or None) == (facts.get("target") or None)


def run_measured(console, args, profiles, plans, jobs, conditions, facts, checks, session) -> int:
    from rtgauge.store.spool import Spool
    from rtgauge.plan.execute import execute, execute_sweeps
    from rtgauge.report.safe import markup
    from rtgauge.plan import plan_seconds, sweep_jobs
    from rtgauge.report.terminal import print_summary
    from rtgauge.store import open_store

    import time
    started = time.monotonic()
    profile = profiles[0]
    store = open_store(args.db)
    run_ids: list[int] = []
    try:
        tell_abandoned(store)
        resume = None
        if getattr(args, "resume", None) is not None:
            from rtgauge.plan.resume import remaining, resume_point
            resume = resume_point(store.get_run(args.resume), args.resume, facts,
                                  any(o["id"] == args.resume for o in store.running_elsewhere(-1)))
            left = remaining(jobs, resume)
            plans, jobs = [left], left
            store.reopen_run(args.resume, resume.drop)
            run_ids.append(args.resume)
            console.print(f"Resuming run {args.resume}: {len(resume.done)} jobs stored whole are kept, "
                          f"{len(left)} to measure" + (f", {sum(len(v) for v in resume.probes.values())} sweep "
                                                      "probes to replay" if resume.probes else ""), markup=False)
        else:
            for p in profiles:
                run_ids.append(store.begin_run(facts, checks, p.name, p.source, sys.argv))
        run_id = run_ids[0]
        try:       # a failure here (stdout closed: `| head`) must not leave the runs running
            if getattr(args, "run_id_file", None):
                write_run_ids(args.run_id_file, run_ids)
            for other in store.running_elsewhere(run_id):
                if other["id"] in run_ids or not same_machine(store, other["id"], facts):
                    continue
                console.print(f"[yellow]Warning: run {other['id']} (pid {other['pid']}) is measuring on this machine "
                              "into the same database now; the two runs load each other and neither measures "
                              "this machine alone.[/]")
            for p, rid, plan in zip(profiles, run_ids, plans):
                console.print(f"Run {rid}: profile {p.name}, {len(plan)} jobs, about "
                              f"{plan_seconds(plan, p.warmup_s) / 60:.1f} min; results go to {store.url}", markup=False)
        except BaseException as e:
            for rid in run_ids:
                store.finish_run(rid, "failed", f"{type(e).__name__}: {e}")
            raise
        if len(run_ids) > 1:
            console.print(f"Runs {' and '.join(map(str, run_ids))} are measured round by round, interleaved.")
        else:
            # what is measured survives the store: a store failure sends the run to a spool file
            store = Spool(store, run_id, facts, checks, profile.name, profile.source, sys.argv)
        try:
            with ProgressView(console, jobs, profile.warmup_s) as view, \
                    conditions.applied(console, args, store, jobs, profile.warmup_s, view) as settings:
                settings.target = session
                if getattr(args, "budget", None) is not None:     # the attribution's threshold (docs/attribution.md)
                    settings.attribute_budget_us = args.budget.latency_us
                settings.virtual = bool((facts.get("virtualization") or {}).get("vm"))
                if len(run_ids) == 1:
                    status, outcomes = execute(store, run_id, jobs, profile.warmup_s, view, settings)
                    per_run = [outcomes]
                    if status == "complete" and getattr(args, "until_verdict", False):
                        status = until_verdict(console, store, run_id, jobs, profile.warmup_s, view, settings,
                                               args, started)
                else:
                    status, per_run = execute_interleaved(store, run_ids, plans, profile.warmup_s, view, settings)
            if status == "complete":
                execute_sweeps(store, run_id, sweep_jobs(profile), console.print,
                               probes=resume.probes if resume else None)
        except BaseException as e:
            try:
                for rid in run_ids:
                    store.finish_run(rid, "failed", f"{type(e).__name__}: {e}")
            finally:
                if getattr(store, "spooled", False):
                    console.print(f"[red]rtgauge: {markup(store.message())}[/]", soft_wrap=True)   # a path to paste: never folded
            raise
        if getattr(store, "spooled", False):
            store.finish_run(run_id, status, f"{len(per_run[0])} of {len(jobs)} jobs measured")
            console.print(f"[red]rtgauge: {markup(store.message())}[/]", soft_wrap=True)   # a path to paste: never folded
            return 1
        failed_any = False
        runs = []
        for rid, plan, outcomes in zip(run_ids, plans, per_run):
            failed = store.failed_measurements(rid)    # a measurement whose load died is failed there
            failed_any = failed_any or bool(failed)
            note = f"{len(outcomes)} of {len(plan)} jobs measured" + (f", {failed} failed" if failed else "")
            store.finish_run(rid, status, note)
            run = store.get_run(rid, documents=bool(args.json))   # read once, as records: summary, JSON, report
            runs.append(run)
            budget = getattr(args, "budget", None)
            if budget is not None and rid == run_id:
                from rtgauge.analysis.run.verdict import judge
                print_summary(console, run, budget.latency_us, judge(run, budget))
            else:
                print_summary(console, run)
        if args.json:
            from rtgauge.report.document import print_json, run_document
            docs = [run_document(run) for run in runs]
            print_json(docs[0] if len(docs) == 1 else docs)
        if not args.no_report:
            path = args.report or f"rtgauge-run-{run_id}.html"
            from rtgauge.report.output import write_html
            budget = getattr(args, "budget", None)
            ids = ",".join(str(r.id) for r in runs)
            write_html(path, runs, fix=f"the run is stored; write its report elsewhere with `rtgauge report "
                                       f"{ids} -o FILE` (or give `rtgauge run --report FILE` next time)",
                       **({"budget": budget, "budget_us": budget.latency_us} if budget else {}))
            console.print(f"Report: {path}", markup=False)
        gate = gate_outcome(console, args, runs) if (getattr(args, "budget", None) or getattr(args, "rules", None)
                                                     or getattr(args, "junit", None)) else 0
        if status == "interrupted" and getattr(settings, "ended_by", None) == "lost":
            # the board went away: a failure of the target, not a stop the user asked for
            why = next((o.doc.get("error") for o in reversed(per_run[0]) if o.doc.get("error")), None)
            print(f"rtgauge: {why or 'lost the connection to the target'}", file=sys.stderr, flush=True)
            console.print(f"Failed: {note}; kept in the store as run {', '.join(map(str, run_ids))} (marked "
                          "interrupted).", markup=False)
            return EXIT_FAILED
        if status == "interrupted":
            console.print(f"Interrupted: {note}; kept in the store as run {', '.join(map(str, run_ids))}.")
            return 130
        if gate:
            return gate
        return 1 if failed_any else 0
    finally:
        store.close()
