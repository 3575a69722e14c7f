"""`rtgauge run`: run a profile's plan, store each job as it ends, print a summary
and write the report."""

from __future__ import annotations

import subprocess
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.plan import Job, build_plan, plan_seconds
from rtgauge.plan.execute import execute
from rtgauge.profiles import load_profile


def register(sub) -> None:
    p = sub.add_parser("run", help="measure this system with a profile and store the results")
    p.add_argument("--profile", default="quick",
                   help="quick (about 3 min), standard (about 25 min) or a TOML file (default: quick)")
    p.add_argument("--db", default=None, help="database URL or SQLite file (default: the user's data dir)")
    p.add_argument("--report", default=None, metavar="FILE",
                   help="HTML report to write at the end (default: rtgauge-run-N.html here)")
    p.add_argument("--no-report", action="store_true", help="do not write an HTML report")
    p.set_defaults(func=cmd_run)


class ProgressView:
    """One bar for the whole plan, advanced by elapsed time within each job."""

    def __init__(self, console: Console, jobs: list[Job], warmup_s: float):
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
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
        self.current = job
        self.progress.update(self.task, description=f"{job.name:<32}", completed=self.done)

    def tick(self, elapsed: float) -> None:
        self.progress.update(self.task, completed=self.done + min(elapsed, self.current.expected_s))

    def end_job(self, job: Job, doc: dict) -> None:
        self.done += job.expected_s
        state = "ok" if doc.get("ok") else f"failed: {doc.get('error')}"
        self.progress.console.print(f"  {job.name}: {state}")
        self.progress.update(self.task, completed=self.done)


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


def check_tools(jobs: list[Job]) -> None:
    from rtgauge.loads import make_load
    from rtgauge.tools import cyclictest

    for job in jobs:
        if job.tool == "cyclictest" and not cyclictest.cyclictest_path():
            raise UserError("the profile cross-checks with cyclictest, which is not installed; "
                            "install it with `apt-get install rt-tests`.")
        load = make_load(job.condition)
        if hasattr(load, "command"):
            load.command("/dev/null")   # raises the missing-package sentence


def cmd_run(args) -> int:
    from rtgauge.report.html import write_report
    from rtgauge.report.terminal import print_summary
    from rtgauge.store import open_store
    from rtgauge.sysinfo import collect_facts, run_doctor

    console = Console()
    if not console.is_terminal:      # a log file or pipe: do not squeeze the tables to 80 columns
        console = Console(width=120)
    profile = load_profile(args.profile)
    jobs = build_plan(profile)
    # cross-checks need their tool; drop them with a note when it is missing
    from rtgauge.tools import cyclictest
    if any(j.tool == "cyclictest" for j in jobs) and not cyclictest.cyclictest_path():
        console.print("[yellow]cyclictest is not installed (apt-get install rt-tests): "
                      "the cross-check is skipped.[/]")
        jobs = [j for j in jobs if j.tool != "cyclictest"]
    check_tools(jobs)
    validate_engine_jobs(jobs)
    facts = collect_facts()
    checks = run_doctor(facts)
    store = open_store(args.db)
    try:
        run_id = store.begin_run(facts, checks, profile.name, profile.source, sys.argv)
        console.print(f"Run {run_id}: profile {profile.name}, {len(jobs)} jobs, about "
                      f"{plan_seconds(jobs, profile.warmup_s) / 60:.1f} min; results go to {store.url}")
        try:
            with ProgressView(console, jobs, profile.warmup_s) as view:
                status, outcomes = execute(store, run_id, jobs, profile.warmup_s, view)
        except BaseException as e:
            store.finish_run(run_id, "failed", f"{type(e).__name__}: {e}")
            raise
        failed = sum(1 for o in outcomes if not o.doc.get("ok"))
        note = f"{len(outcomes)} of {len(jobs)} jobs measured" + (f", {failed} failed" if failed else "")
        store.finish_run(run_id, status, note)
        run = store.get_run(run_id)
        print_summary(console, run)
        if not args.no_report:
            path = args.report or f"rtgauge-run-{run_id}.html"
            write_report([run], path)
            console.print(f"Report: {path}")
        if status == "interrupted":
            console.print(f"Interrupted: {note}; kept in the store as run {run_id}.")
            return 130
        return 1 if failed else 0
    finally:
        store.close()
