"""`rtgauge run` from what the user asked (a RunRequest, plan/session.py) to an exit
status, in named stages, each a method below, run in this order by RunLifecycle.run():

    prepare -> check -> apply -> measure -> store -> judge -> report

prepare reads the request (bad input refused in one sentence, nothing tried), check
tries what the plan needs (tools, privilege, the target) and stores nothing, apply
begins the runs and sets the machine up for them (reverted after, also on failure),
measure runs the jobs, store ends the runs in the database, judge decides the verdict
and the gates, report says and writes it all. The command line (cli/run.py) only makes
the request; nothing here reads argparse or imports rtgauge.cli."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from rtgauge import safefile
from rtgauge.config import default_profile
from rtgauge.errors import EXIT_FAILED, UserError
from rtgauge.loads import LoadContext
from rtgauge.loads.supervise import remove_stale_workdirs
from rtgauge.plan import plan_seconds, sweep_jobs, sweep_outline
from rtgauge.plan.checks import check_jobs, check_target_run, fit_cross_checks_to_target, plan_jobs, target_address
from rtgauge.plan.execute import execute, execute_interleaved, execute_sweeps
from rtgauge.plan.judge import judge_run, prepare_gates, report_gates, until_verdict
from rtgauge.plan.progress import ProgressView
from rtgauge.plan.resume import remaining, resume_point, resumed_profile
from rtgauge.plan.session import RunConditions, RunRequest
from rtgauge.printable import printable
from rtgauge.profiles import MAX_ROUNDS, load_profile, valid_rounds
from rtgauge.remote.loads import check_on_target
from rtgauge.report.abandoned import tell_abandoned
from rtgauge.report.document import print_json, run_document
from rtgauge.report.output import write_html
from rtgauge.report.safe import markup
from rtgauge.report.terminal import print_summary
from rtgauge.store import open_store
from rtgauge.store.spool import Spool
from rtgauge.sysinfo import collect_facts, run_doctor


class RunLifecycle:
    """One `rtgauge run`: the request, the console its progress and results go to, and
    what each stage hands the next."""

    def __init__(self, request: RunRequest, console):
        self.request = request
        self.console = console
        self.profiles: list = []
        self.gates = None            # plan/judge.py Gates
        self.address: str | None = None
        self.conditions = None       # plan/session.py RunConditions
        self.plans: list[list] = []
        self.jobs: list = []
        self.session = None          # rtgauge.remote.session.TargetSession, on a target
        self.facts: dict = {}
        self.checks: list = []
        self.db = None               # the store (a Spool for a single run once begun)
        self.run_ids: list[int] = []
        self.resume = None           # plan/resume.py Resume
        self.view = None
        self.settings = None
        self.status = "complete"
        self.per_run: list[list] = []
        self.runs: list = []
        self.note = ""
        self.failed_any = False
        self.sweep_stopped = False   # a stop came during the sweep (measure_sweeps)
        self.judgement = None

    def run(self) -> int:
        """The stages in order; the exit status."""
        self.prepare()
        try:
            self.check()
            started = time.monotonic()
            self.db = open_store(self.request.db)
            try:
                self.begin()
                try:
                    with self.apply() as settings:
                        self.measure(settings, started)
                    self.measure_sweeps()
                except BaseException as e:
                    self.fail(e)
                    raise
                spooled = self.store()
                if spooled is not None:
                    return spooled
                self.judge()
                return self.report()
            finally:
                self.db.close()
        finally:
            if self.session is not None:
                self.session.close()

    # -- prepare ---------------------------------------------------------------------------

    def prepare(self) -> None:
        """Prepare: the request made concrete, bad input refused before anything is tried:
        the profile (--resume's own, else --profile or the configured default) and
        --interleave's; the gates (budget, --fail-on, --until-verdict, the files the run
        writes); the target and what a run there cannot do yet; the run conditions
        (durations, CPUs, tracing, tuning: RunConditions); each profile's jobs with the
        run's overrides. Left-over work directories of killed runs are removed first."""
        r = self.request
        remove_stale_workdirs()
        if r.rounds is not None and not valid_rounds(r.rounds):
            raise UserError(f"--rounds {r.rounds} is out of range; give a whole number from 1 to {MAX_ROUNDS}.")
        if r.resume is not None:
            self.profiles = [resumed_profile(r.db, r.resume, r.profile, r.interleave)]
        else:
            self.profiles = [load_profile(default_profile(r.profile) or "quick")]
        if r.interleave:
            self.profiles.append(load_profile(r.interleave))
            for p in self.profiles:
                if p.tire is not None or p.hil_sustained is not None:
                    raise UserError(f"--interleave measures profiles of [[jobs]] only; profile {p.origin} has a "
                                    "[tire] or [hil_sustained] table, run it alone.")
        profile = self.profiles[0]
        self.gates = prepare_gates(r, profile)
        self.address = target_address(r.target, self.profiles)
        if self.address:
            check_target_run(self.address, r, self.profiles)
        self.conditions = RunConditions(
            profile.warmup_s, duration=r.duration, segment=r.segment, rt_cpus=r.rt_cpus, load_cpus=r.load_cpus,
            housekeeping_cpus=r.housekeeping_cpus, trace_threshold_us=r.trace_threshold_us, attribute=r.attribute,
            attribute_threshold_us=r.attribute_threshold_us, load_dir=r.load_dir, allow_netns=r.allow_netns,
            tuned=r.tuned, rt_throttling_off=r.rt_throttling_off, live=r.live, metrics_file=r.metrics_file,
            mount_tracefs=r.mount_tracefs, profile=profile)
        self.plans = [plan_jobs(p, r, self.conditions) for p in self.profiles]

    # -- check -----------------------------------------------------------------------------

    def check(self) -> None:
        """Check: that the plan can run as asked, before anything is stored. For each
        profile: the files its jobs write (or, for a target, its load conditions there),
        the cross-checks' tools (dropped with a note where missing), the loads' programs,
        the engine's optional flags and its --dry-run of every job, and the real-time
        privilege (refused, or fallen back with --allow-fallback). Then the machine: the
        target connected to (login, privilege, load tools and cross-check tools checked
        there) and its facts, or this machine's facts and doctor checks."""
        self.plans = [check_jobs(self.console, p, plan, self.request, self.conditions, self.address)
                      for p, plan in zip(self.profiles, self.plans)]
        self.jobs = [j for plan in self.plans for j in plan]
        if not self.address:
            self.facts = collect_facts()
            self.checks = run_doctor(self.facts)
            return
        # asyncssh (the ssh extra) is imported only for a run on a target: a core install runs here
        from rtgauge.remote.session import TargetSession
        address = self.address
        self.console.print(f"Connecting to {address} ...", markup=False)
        # refuses an unreachable, unauthenticated or unprivileged target before anything is stored
        self.session = TargetSession(address).__enter__()
        check_on_target([j.condition for j in self.jobs], self.session,
                        LoadContext(allow_netns=self.conditions.allow_netns))
        facts = self.facts = self.session.facts()
        self.checks = [{"name": "target", "status": "info", "value": f"measured on {address} "
                        f"({facts.get('hostname')}, {facts.get('arch')}, Linux {facts.get('kernel_release')})",
                        "advice": "the checks below read the target's /proc and /sys over the connection"}]
        self.checks += run_doctor(facts)
        self.conditions.target = self.session
        self.console.print(f"Target {address}: {facts.get('hostname')}, {facts.get('arch')}, "
                           f"kernel {facts.get('kernel_release')}", markup=False)
        fit_cross_checks_to_target(self.console, self.plans, self.session, facts.get("cpus"))
        self.jobs = [j for plan in self.plans for j in plan]

    # -- apply -----------------------------------------------------------------------------

    def begin(self) -> None:
        """Apply, first: the runs begun in the store (or --resume's run reopened, its jobs
        stored whole kept), so that a run exists before anything measured goes into it;
        their ids written (--run-id-file) and said. A single run's store is a spool: what
        is measured survives a store that fails."""
        r, console, store = self.request, self.console, self.db
        tell_abandoned(store)
        if r.resume is not None:
            self.resume = resume_point(store.get_run(r.resume), r.resume, self.facts,
                                       any(o["id"] == r.resume for o in store.running_elsewhere(-1)))
            left = remaining(self.jobs, self.resume)
            self.plans, self.jobs = [left], left
            store.reopen_run(r.resume, self.resume.drop)
            self.run_ids.append(r.resume)
            probes = self.resume.probes
            console.print(f"Resuming run {r.resume}: {len(self.resume.done)} jobs stored whole are kept, "
                          f"{len(left)} to measure" + (f", {sum(len(v) for v in probes.values())} sweep "
                                                      "probes to replay" if probes else ""), markup=False)
        else:
            for p in self.profiles:
                self.run_ids.append(store.begin_run(self.facts, self.checks, p.name, p.source, r.argv))
        run_id = self.run_ids[0]
        try:       # a failure here (stdout closed: `| head`) must not leave the runs running
            if r.run_id_file:
                write_run_ids(r.run_id_file, self.run_ids)
            for other in store.running_elsewhere(run_id):
                if other["id"] in self.run_ids or not same_machine(store, other["id"], self.facts):
                    continue
                console.print(f"[yellow]Warning: run {other['id']} (pid {other['pid']}) is measuring on this machine "
                              "into the same database now; the two runs load each other and neither measures "
                              "this machine alone.[/]")
            for p, rid, plan in zip(self.profiles, self.run_ids, self.plans):
                sweeps = "".join(f", {sweep_outline(j)}" for j in sweep_jobs(p))
                console.print(f"Run {rid}: profile {p.name}, {len(plan)} jobs, about "
                              f"{plan_seconds(plan, p.warmup_s) / 60:.1f} min{sweeps}; results go to {store.url}",
                              markup=False)
        except BaseException as e:
            for rid in self.run_ids:
                store.finish_run(rid, "failed", f"{type(e).__name__}: {e}")
            raise
        if len(self.run_ids) > 1:
            console.print(f"Runs {' and '.join(map(str, self.run_ids))} are measured round by round, interleaved.")
        else:
            profile = self.profiles[0]
            self.db = Spool(store, run_id, self.facts, self.checks, profile.name, profile.source, r.argv)

    @contextmanager
    def apply(self):
        """Apply: the progress view and the run conditions applied for the measurement
        (partition, tuning, tracefs, the live view: RunConditions.applied, reverted after,
        also on failure and SIGTERM); yields the RunSettings the jobs run with."""
        warmup_s = self.profiles[0].warmup_s
        with ProgressView(self.console, self.jobs, warmup_s) as view, \
                self.conditions.applied(self.console, self.request, self.db, self.jobs, warmup_s,
                                        view) as settings:
            settings.target = self.session
            if self.gates.budget is not None:     # the attribution's threshold (docs/attribution.md)
                settings.attribute_budget_us = self.gates.budget.latency_us
            settings.virtual = bool((self.facts.get("virtualization") or {}).get("vm"))
            self.view, self.settings = view, settings
            yield settings

    # -- measure ---------------------------------------------------------------------------

    def measure(self, settings, started: float) -> None:
        """Measure: the jobs, each stored as it ends (plan/execute.py); several runs
        (--interleave) round by round; with --until-verdict, further rounds of the
        latency jobs while the verdict is undecided (plan/judge.py)."""
        warmup_s = self.profiles[0].warmup_s
        run_id = self.run_ids[0]
        if len(self.run_ids) == 1:
            self.status, outcomes = execute(self.db, run_id, self.jobs, warmup_s, self.view, settings)
            self.per_run = [outcomes]
            if self.status == "complete" and self.request.until_verdict:
                self.status = until_verdict(self.console, self.db, run_id, self.jobs, warmup_s, self.view,
                                            settings, self.gates, started)
        else:
            self.status, self.per_run = execute_interleaved(self.db, self.run_ids, self.plans, warmup_s,
                                                            self.view, settings)

    def measure_sweeps(self) -> None:
        """Measure, last: the profile's sweeps (tire, HIL sustained) after the jobs, outside
        the applied conditions; --resume's stored probes replayed."""
        if self.status != "complete":
            return
        try:
            execute_sweeps(self.db, self.run_ids[0], sweep_jobs(self.profiles[0]), self.console.print,
                           probes=self.resume.probes if self.resume else None)
        except KeyboardInterrupt:
            # a stop during the sweep (Ctrl-C, SIGTERM): the probe under way dies with it, the
            # probes stored so far are kept, and the run is interrupted, as a stop during a job
            # makes it (and so resumable), not failed
            self.status, self.sweep_stopped = "interrupted", True

    def fail(self, e: BaseException) -> None:
        """A measurement that raised: the runs marked failed, and a spooled store's file said."""
        try:
            for rid in self.run_ids:
                self.db.finish_run(rid, "failed", f"{type(e).__name__}: {e}")
        finally:
            self.say_spooled()

    def say_spooled(self) -> None:
        if getattr(self.db, "spooled", False):
            self.console.print(f"[red]rtgauge: {markup(self.db.message())}[/]", soft_wrap=True)   # a path to paste

    # -- store -----------------------------------------------------------------------------

    def store(self) -> int | None:
        """Store: each run ended with its status and what was measured, and read back once
        as records (for the summary, the JSON and the report). A store that failed during
        the run has spooled it: the spool file is said and the exit status is 1."""
        if getattr(self.db, "spooled", False):
            self.db.finish_run(self.run_ids[0], self.status, self.jobs_measured(self.run_ids[0], self.per_run[0],
                                                                                self.jobs))
            self.say_spooled()
            return 1
        for rid, plan, outcomes in zip(self.run_ids, self.plans, self.per_run):
            failed = self.db.failed_measurements(rid)    # a measurement whose load died is failed there
            self.failed_any = self.failed_any or bool(failed)
            self.note = (self.jobs_measured(rid, outcomes, plan) + (f", {failed} failed" if failed else "")
                         + (", the sweep stopped before its end (`rtgauge run --resume RUN` measures the rest)"
                            if self.sweep_stopped and rid == self.run_ids[0] else ""))
            self.db.finish_run(rid, self.status, self.note)
            self.runs.append(self.db.get_run(rid, documents=bool(self.request.json)))
        return None

    def jobs_measured(self, rid: int, outcomes: list, plan: list) -> str:
        """'N of M jobs measured', over the whole run: a job stored in segments is one job,
        and a resumed run's jobs kept whole from its earlier sittings count as measured
        (they are the run's, not this sitting's)."""
        kept = len(self.resume.done) if self.resume is not None and rid == self.run_ids[0] else 0
        measured = len({(o.job.name, o.job.round) for o in outcomes})     # a long job's segments are one job
        return (f"{measured + kept} of {len(plan) + kept} jobs measured"
                + (f" ({kept} in earlier sittings)" if kept else ""))

    # -- judge -----------------------------------------------------------------------------

    def judge(self) -> None:
        """Judge: the verdict against the budget and the --fail-on rules on the first run,
        and the exit status they give (plan/judge.py)."""
        self.judgement = judge_run(self.runs[0], self.gates)

    # -- report ----------------------------------------------------------------------------

    def report(self) -> int:
        """Report: each run's summary (the first with its verdict), the JSON (--json), the
        HTML report, the rules' outcomes and the JUnit file; then the exit status (a lost
        target 1, an interruption 130, a gate its status, a failed measurement 1)."""
        console, gates = self.console, self.gates
        for rid, run in zip(self.run_ids, self.runs):
            if gates.budget is not None and rid == self.run_ids[0]:
                print_summary(console, run, gates.budget.latency_us, self.judgement.verdict)
            else:
                print_summary(console, run)
        if self.request.json:
            docs = [run_document(run) for run in self.runs]
            print_json(docs[0] if len(docs) == 1 else docs)
        if not self.request.no_report:
            path = self.request.report or f"rtgauge-run-{self.run_ids[0]}.html"
            ids = ",".join(str(r.id) for r in self.runs)
            write_html(path, self.runs, fix=f"the run is stored; write its report elsewhere with `rtgauge report "
                                            f"{ids} -o FILE` (or give `rtgauge run --report FILE` next time)",
                       **({"budget": gates.budget, "budget_us": gates.budget.latency_us} if gates.budget else {}))
            console.print(f"Report: {path}", markup=False)
        if gates.any:
            report_gates(console, self.judgement, gates, self.runs[0])
        ids = ", ".join(map(str, self.run_ids))
        if self.status == "interrupted" and getattr(self.settings, "ended_by", None) == "lost":
            # the board went away: a failure of the target, not a stop the user asked for
            why = next((o.doc.get("error") for o in reversed(self.per_run[0]) if o.doc.get("error")), None)
            print(f"rtgauge: {why or 'lost the connection to the target'}", file=sys.stderr, flush=True)
            console.print(f"Failed: {self.note}; kept in the store as run {ids} (marked interrupted).", markup=False)
            return EXIT_FAILED
        if self.status == "interrupted":
            console.print(f"Interrupted: {self.note}; kept in the store as run {ids}.")
            return 130
        if self.judgement.status:
            return self.judgement.status
        return 1 if self.failed_any else 0


def write_run_ids(path: str, run_ids: list[int]) -> None:
    """--run-id-file: the runs' ids, one a line (rtgauge/lab/runner.py reads them)."""
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
