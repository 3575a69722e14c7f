"""Run a plan: for each job start its load, run the engine (or the cross-check tool),
stop the load, store the measurement in its own transaction.

A long latency job is measured in segments (RunSettings.segment_s): the load keeps
running, each segment is a full engine run stored as soon as it ends, so a run that
dies at hour 20 keeps its first 20 hours. Each stored measurement carries the load
delivered during it, the CPU partition, and the counters of what else happened on
the measured CPUs (interrupts, softirqs, context switches, SMIs); with a trace
threshold, the tail of the kernel trace around the breach.

Interruption (Ctrl-C, SIGTERM or SIGHUP): the running measurement is asked to stop (SIGTERM;
the engine and cyclictest both print what they measured so far), it is stored
marked interrupted, the load is stopped, the run is marked interrupted, and the
caller exits 130."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from rtgauge import tools
from rtgauge.analysis.run.spikes import attribute
from rtgauge.analysis.samples import read_samples
from rtgauge.catalogue import LATENCY, catalogue
from rtgauge.clock import SYSTEM, Clock
from rtgauge.errors import UserError
from rtgauge.hil.sustained import sustained_and_store
from rtgauge.loads import Load, LoadContext, judge_delivery, make_load
from rtgauge.loads.partition import Partition, apply_cpusets, join_placement
from rtgauge.loads.supervise import die_with_parent, workdir_prefix
from rtgauge.plan import HIL_SUSTAINED, TIRE_SWEEP, Job, SweepJob, host_deadline_s
from rtgauge.records import engine_document
from rtgauge.remote.loads import target_load
from rtgauge.store.validate import DOCUMENT_MAX, check_engine_document, parse_document
from rtgauge.sysinfo.readers import read_bounded
from rtgauge.tire.sweep import sweep_and_store
from rtgauge.trace import ThresholdTrace, Tracefs, tasks as tasklook
from rtgauge.trace.counters import counters, others_load, take_snapshot
from rtgauge.trace.live import LiveView
from rtgauge.trace.wholerun import WholeRunTrace

STOP_GRACE_S = 15.0
DEFAULT_SEGMENT_S = 600.0
MAX_DURATION_S = 365 * 86400


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP arrived before a measurement started."""


class StopFlag:
    """Set by SIGINT/SIGTERM/SIGHUP. Checked between steps rather than raised from the
    handler, so a signal never lands in the middle of a database transaction. Its sleep
    waits by CLOCK (rtgauge/clock.py)."""

    def __init__(self, clock: Clock = SYSTEM) -> None:
        self.signal: str | None = None
        self.clock = clock

    def __bool__(self) -> bool:
        return self.signal is not None

    def check(self) -> None:
        if self.signal:
            raise Interrupted(self.signal)

    def sleep(self, seconds: float) -> None:
        end = self.clock.monotonic() + seconds
        while self.clock.monotonic() < end:
            self.check()
            self.clock.sleep(min(0.1, max(0.0, end - self.clock.monotonic())))


@dataclass
class JobOutcome:
    job: Job
    doc: dict
    status: int
    measurement_id: int | None
    interrupted: bool


@dataclass
class RunSettings:
    """How the plan is run beyond the jobs themselves."""
    warmup_s: float = 1.0
    partition: Partition | None = None
    load_ctx: LoadContext = field(default_factory=LoadContext)
    segment_s: float | None = DEFAULT_SEGMENT_S
    trace_threshold_us: int | None = None
    attribute: bool = False                     # trace the whole job and attribute every spike
    attribute_threshold_us: float | None = None   # None: the budget's, else the run's p99.9 (docs/attribution.md)
    attribute_budget_us: float | None = None      # the job's budget: the attribution's threshold when none is given
    virtual: bool = False                       # a virtual machine (facts' virtualization.vm)
    tracefs: Tracefs | None = None
    live: LiveView | None = None
    say: Callable[[str], None] = print
    record: dict = field(default_factory=dict)    # stored with every measurement's load
    target: object = None   # rtgauge.remote.session.TargetSession: engine jobs run there
    # what ended an interrupted run: "SIGINT"/"SIGTERM"/"SIGHUP" (a stop asked for), or "lost" (the
    # target's connection went: a failure, not a stop; the caller exits 1, not 130)
    ended_by: str | None = None
    clock: Clock = SYSTEM     # what a measurement's poll, its host deadline and its length go by


@contextmanager
def interrupts_flagged(clock: Clock = SYSTEM):
    """Within the block SIGINT, SIGTERM and SIGHUP (the terminal or ssh session closed) set
    the returned StopFlag: the segment being measured is kept, the run marked interrupted.
    A SIGHUP the caller ignores (`nohup`) stays ignored."""
    flag = StopFlag(clock)

    def handler(signum, frame):
        flag.signal = signal.Signals(signum).name

    stops = [signal.SIGINT, signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        stops.append(signal.SIGHUP)
    old = {s: signal.signal(s, handler) for s in stops}
    try:
        yield flag
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- plan overrides (run options) --------------------------------------------------------

def parse_duration(text: str) -> float:
    """'24h', '10m', '90s', '1.5h', '2d', '500ms' or plain seconds -> seconds (the units the
    engine's time options take too: --duration-s 5m)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|us|µs|ns|[smhd]?)\s*", str(text))
    if not m:
        raise UserError(f"duration {text!r} is not understood; write it like 90s, 10m, 24h or 2d.")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "ms": 1e-3, "us": 1e-6,
                                   "µs": 1e-6, "ns": 1e-9}[m.group(2)]
    if not 0.1 <= seconds <= MAX_DURATION_S:
        raise UserError(f"duration {text} is out of range; choose from 0.1s to 365d.")
    return seconds


def apply_overrides(jobs: list[Job], duration_s: float | None, rt_cpus: list[int] | None) -> list[Job]:
    """--duration sets every latency job's length (a cycle count would win over it, so it
    goes); --rt-cpus becomes the CPUs of every job that measures on a CPU list (its tool's
    adapter says which: takes_cpus)."""
    for job in jobs:
        if duration_s is not None and catalogue().kind_of(job.test) == LATENCY:   # cross-checks too
            job.options.pop("cycles", None)
            job.options["duration-s"] = round(duration_s, 3)
            job.expected_s = duration_s
        if rt_cpus:
            if tools.adapter_of(job.tool).takes_cpus(job):
                job.options["cpus"] = ",".join(map(str, rt_cpus))
                job.cpus = list(rt_cpus)
    return jobs


def split_segments(job: Job, segment_s: float | None) -> list[dict]:
    """The option sets of a job's segments: one unless it is an engine latency job longer
    than a segment."""
    if not segment_s or not is_engine_latency(job) or "cycles" in job.options:
        return [dict(job.options)]
    total = float(job.options.get("duration-s", catalogue().test(job.test).option("duration-s").default))
    n = math.ceil(total / segment_s - 1e-9)
    if n <= 1:
        return [dict(job.options)]
    out = []
    for i in range(n):
        length = segment_s if i < n - 1 else total - segment_s * (n - 1)
        out.append(dict(job.options, **{"duration-s": round(max(length, 0.01), 3)}))
    return out


# -- one measurement ------------------------------------------------------------------------

def failure_document(job: Job, error: str) -> dict:
    return engine_document(job.test, ok=False, error=error)


def job_command(job: Job, out_path: str, extra: list[str] = ()) -> list[str]:
    """The command of a job: its tool's adapter's (rtgauge/tools)."""
    tool = tools.adapter_of(job.tool)
    if tool is None or tool.command is None:
        raise ValueError(f"unknown tool {job.tool}")
    return tool.command(job, out_path, extra)


def read_document(job: Job, out_path: Path, status: int, interrupted: bool, stderr: str) -> dict:
    """The job's result as an engine-contract document, also when the tool failed."""
    data = read_bounded(str(out_path), DOCUMENT_MAX)
    if not data:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {status}"
        why = "a result larger than rtgauge reads" if data is None and out_path.exists() else last
        return failure_document(job, f"{job.tool} produced no result: {why}")
    return checked_document(job, data, f"{job.tool}'s result", status, interrupted)


def checked_document(job: Job, data, where: str, status: int, interrupted: bool) -> dict:
    """A tool's document (here or from a board) through the import's strict parser and
    schema; one of the wrong size, depth or shape, or with NaN, becomes a failed
    measurement saying so, never a traceback nor a number stored as measured. The tool's
    adapter makes its result readable JSON (a board's came as JSON) and the job's document."""
    tool = tools.adapter_of(job.tool)
    try:
        if tool is None or tool.to_document is None:
            raise UserError(f"{job.tool} is not a tool rtgauge runs")
        if isinstance(data, bytes):
            data = tool.readable(data)
        raw = parse_document(data, where) if isinstance(data, bytes) else data   # a board's: parsed as strictly
        return check_engine_document(tool.to_document(raw, job, where, status, interrupted), where)
    except UserError as e:
        return failure_document(job, str(e))


def measurement_placement(partition: Partition | None):
    """preexec_fn for the engine: its cpuset (measured + housekeeping CPUs) and the
    same affinity, so the collector can leave the measured CPUs."""
    if partition is None:
        return None
    return join_placement(partition.engine_cpuset_cpus(), partition.procs_file("rt"))


def is_engine_latency(job: Job) -> bool:
    """A wake-up latency job of the engine (kind latency)."""
    return job.tool == "engine" and catalogue().kind_of(job.test) == LATENCY


def measure(job: Job, s: RunSettings, stop: StopFlag, on_tick=None) -> tuple[dict, int, bool, list[str]]:
    """Run the tool once; returns (document, exit status, interrupted, command)."""
    if s.target is not None:
        return measure_on_target(job, s, stop, on_tick)
    with tempfile.TemporaryDirectory(prefix=workdir_prefix("job")) as tmp:
        out_path, err_path = Path(tmp) / "result.json", Path(tmp) / "stderr.txt"
        extra: list[str] = []
        tracer = whole = None
        untraced = s.tracefs.note if s.tracefs else "tracefs not opened"
        samples = Path(tmp) / "samples.csv"
        if is_engine_latency(job) and s.live is not None:     # a line a window, not a sample (docs/samples.md)
            status_path = Path(tmp) / "status.jsonl"
            extra += ["--status", str(status_path)]
            s.live.follow(status_path, job.name, job.condition)
        if is_engine_latency(job) and s.attribute and s.tracefs and s.tracefs.path:
            extra += ["--samples", str(samples)]
            whole = WholeRunTrace(s.tracefs.path, job.cpus, Path(tmp) / "trace.txt")
        if is_engine_latency(job) and s.trace_threshold_us and s.tracefs and s.tracefs.path:
            extra += ["--max-latency-us", str(s.trace_threshold_us), "--break"]
            tracer = ThresholdTrace(s.tracefs.path, job.cpus, s.trace_threshold_us,
                                    s.partition.procs_file("rt") if s.partition else None)
        cmd = job_command(job, str(out_path), extra)
        interrupted, proc = False, None
        before = take_snapshot(job.cpus)
        try:
            if tracer:
                tracer.start()
            if whole:
                try:
                    whole.start()
                except OSError as e:       # measured anyway, saying why it was not attributed
                    whole.remove()
                    whole, untraced = None, f"could not start the trace ({e.strerror or e})"
            with open(err_path, "w") as err:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                        preexec_fn=die_with_parent(measurement_placement(s.partition)))
                if whole:      # who the traced threads are: looked at as the job starts and as it ends
                    own = {proc.pid: tasklook.ENGINE, **({whole.reader.pid: tasklook.READER} if whole.reader else {})}
                    first_look, mid_look = tasklook.look(own), None
                deadline = s.clock.monotonic() + host_deadline_s(job)
                started = s.clock.monotonic()
                while proc.poll() is None:
                    if whole and mid_look is None and samples.exists():   # measuring: its threads are up
                        mid_look = tasklook.look(own)
                    if stop:
                        interrupted = True
                        stop_child(proc)
                        break
                    if on_tick:
                        on_tick(s.clock.monotonic() - started)
                    if s.clock.monotonic() > deadline:
                        proc.kill()
                        proc.wait()
                        break
                    s.clock.sleep(0.1)
            after = take_snapshot(job.cpus)
            if whole:
                seen = tasklook.merged(tasklook.merged(first_look, mid_look or {}), tasklook.look(own))
            traced = whole.finish() if whole else None
            interrupted = interrupted or bool(stop)
            doc = read_document(job, out_path, proc.returncode, interrupted, err_path.read_text())
            env = doc.setdefault("env", {})
            env["counters"] = counters(before, after, job.cpus, doc)
            if job.condition == "idle":      # is idle idle? (docs/loads.md)
                env["others_load"] = others_load(before, after, job.cpus)
            if job.notes:       # e.g. an if_available flag left out; the engine's own notes kept
                env["notes"] = [*env.get("notes", []), *(n for n in job.notes if n not in env.get("notes", []))]
            if tracer:
                env["trace"] = tracer.finish(doc)
            elif is_engine_latency(job) and s.trace_threshold_us:
                env["trace"] = {"unavailable": s.tracefs.note if s.tracefs else "tracefs not opened"}
            if whole:
                env["attribution"] = attribute_job(Path(tmp) / "trace.txt", samples, doc, s, job.cpus, traced,
                                                   Path(cmd[0]).name[:15], seen)
            elif is_engine_latency(job) and s.attribute:
                env["attribution"] = {"unavailable": untraced}
        finally:
            if proc is not None and proc.poll() is None:
                stop_child(proc)
            if tracer:
                tracer.remove()
            if whole:
                whole.remove()
        if s.live is not None:
            s.live.poll()       # the last windows, while the status file is still there
    if interrupted:
        doc["interrupted"] = True
    command = cmd if tools.adapter_of(job.tool).records_command_line else [job.tool]
    command = [("RESULT" if c == str(out_path) else c) for c in command]
    return doc, proc.returncode, interrupted, command


def attribute_job(trace_path: Path, samples_path: Path, doc: dict, s: RunSettings, cpus: list[int],
                  traced: dict, comm: str, tasks: dict | None = None) -> dict:
    """env.attribution of a latency job from its whole-run trace and raw samples; the
    measuring threads are known by their name (comm: the engine's, at most 15 characters).
    The threshold: --attribute-threshold-us, else the job's budget, else the run's p99.9."""
    if not samples_path.exists():
        return {"unavailable": "the engine wrote no samples (it did not start measuring)"}
    env = doc.get("env") or {}
    threads = {t.get("index"): t.get("cpu") for t in env.get("threads") or []}
    threshold, source = s.attribute_threshold_us, "user"
    if threshold is None and s.attribute_budget_us is not None:
        threshold, source = s.attribute_budget_us, "the job's budget"
    stalls = (env.get("stalls") or {}).get("intervals") if isinstance(env.get("stalls"), dict) else None
    with open(trace_path, errors="replace") as lines:
        out = attribute(lines, read_samples(str(samples_path), bounded=False), threads, {comm}, threshold, cpus,
                        threshold_from=source, tasks=tasks, virtual=s.virtual,
                        stalls=stalls if isinstance(stalls, list) else None)
    out["trace"] = traced
    return out


def measure_on_target(job: Job, s: RunSettings, stop: StopFlag, on_tick=None) -> tuple[dict, int, bool, list[str]]:
    """measure() on a remote target (rtgauge.remote), as the job's tool adapter runs it
    there (run_on_target; the engine built for it runs there under its guard); Ctrl-C
    stops it there and keeps what it measured; a lost connection keeps nothing of this
    job (the engine there stops by itself) and ends the run as interrupted."""
    limit = host_deadline_s(job) * getattr(s.target.target, "patience", 1.0)   # a slow target: longer
    outcome, command = tools.adapter_of(job.tool).run_on_target(s.target, job, stop, limit, on_tick)
    run = outcome.run
    if run is not None and run.document is not None and not outcome.error:
        status = run.status
        doc = checked_document(job, run.document, f"{job.tool}'s result on {s.target.address}", status,
                               outcome.interrupted or bool(stop))
    else:
        why = outcome.error or (f"{job.tool} on {s.target.address} produced no result: "
                               + ((run.stderr.strip().splitlines() or [f"exit status {run.status}"])[-1]
                                  if run else "stopped before it started"))
        doc, status = failure_document(job, why), (run.status if run else -1)
    interrupted = outcome.interrupted or bool(stop)
    env = doc.setdefault("env", {})
    env["target"] = s.target.address
    if job.notes:
        env["notes"] = [*env.get("notes", []), *(n for n in job.notes if n not in env.get("notes", []))]
    if interrupted:
        doc["interrupted"] = True
    return doc, status, interrupted, command


def stop_child(proc: subprocess.Popen) -> None:
    """Ask a measurement to stop and print what it has; kill it if it does not."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except ProcessLookupError:
        pass


# -- a job: its load and its segments -----------------------------------------------------

@dataclass
class Segment:
    job: Job              # the job with the segment's options
    segment: int | None   # 1..N when the job's long load was stored in segments
    doc: dict
    status: int
    interrupted: bool
    delivered: dict
    started_at: str
    duration_s: float
    command: list[str]


def load_context(s: RunSettings) -> LoadContext:
    ctx = replace(s.load_ctx)
    if s.partition is not None:
        ctx.cpus = s.partition.load_cpus
        ctx.cgroup_procs = s.partition.procs_file("load")
    return ctx


def delivered_between(load: Load, before: dict, after: dict) -> dict:
    """What the load delivered in one segment: the difference of two snapshots."""
    out = {"condition": load.name, "tool": getattr(load, "tool_name", lambda: None)()}
    for key in ("cpu_s", "wall_s"):
        if key in after:
            out[key] = round(after[key] - before.get(key, 0.0), 3)
    return out


def run_job_segments(job: Job, s: RunSettings, stop: StopFlag, on_tick=None) -> Iterator[Segment]:
    """Start the job's load, measure each segment, stop the load (also when the
    consumer stops early or anything fails). The load of the last segment is stopped
    before it is yielded, so its full report (bogo-ops, ...) goes with it."""
    if s.target is not None:     # started there, over the run's connection (rtgauge/remote/loads.py)
        load = target_load(job.condition, s.target, load_context(s))
    else:
        load = make_load(job.condition, replace(load_context(s), measured_cpus=list(job.cpus) or None))
    segments = split_segments(job, s.segment_s)
    stopped = False
    try:
        stop.check()
        load.start()
        if job.condition != "idle" and s.warmup_s:
            stop.sleep(s.warmup_s)
        # what the load delivered while measured: a snapshot after the warm-up, another at
        # each segment's end (the load's start and warm-up are not the measurement's). On a
        # target a snapshot reads its /proc over the connection (seconds on a loaded system
        # under emulation): one segment there takes its figures from the stop, whole life
        between = len(segments) > 1 or s.target is None
        previous = load.snapshot() if between else {}
        done_s = 0.0
        for i, options in enumerate(segments):
            stop.check()
            sjob = replace(job, options=options, expected_s=float(options.get("duration-s", job.expected_s))
                           if len(segments) > 1 else job.expected_s)
            started_at, t0 = now_iso(), s.clock.monotonic()
            tick = (lambda e, base=done_s: on_tick(base + e)) if on_tick else None
            doc, status, interrupted, command = measure(sjob, s, stop, tick)
            done_s += sjob.expected_s
            breached = bool(((doc.get("env") or {}).get("trace") or {}).get("breached"))
            last = i == len(segments) - 1 or interrupted or breached
            if last:
                current = load.snapshot() if between else {}
                delivered = load.stop()
                stopped = True
                if between and "cpu_s" in current:
                    delivered["cpu_s_whole_job"] = delivered.get("cpu_s")
                    delivered.update(delivered_between(load, previous, current))
            else:
                current = load.snapshot()
                delivered = delivered_between(load, previous, current)
                delivered["alive_until_stop"] = load.running()
            previous = current
            segment = None
            if len(segments) > 1:
                delivered["segment"] = {"index": i + 1, "of": len(segments), "job": job.name,
                                        "duration_s": sjob.expected_s}
                segment = i + 1
            if job.round is not None:
                delivered["round"] = {"index": job.round, "of": job.rounds}
            if s.partition is not None:
                delivered["partition"] = s.partition.record()
            delivered.update(s.record)
            judge_delivery(job.condition, delivered)
            yield Segment(sjob, segment, doc, status, interrupted, delivered, started_at,
                          s.clock.monotonic() - t0, command)
            if last:
                return
    finally:
        if not stopped:
            load.stop()


def job_record(job: Job, status: int, delivered: dict, started_at: str, duration_s: float,
               command: list[str], segment: int | None = None) -> dict:
    """What the store keeps of how a job ran: its name, and its round and segment as
    fields of their own (the name says the job alone)."""
    return {"name": job.name, "tool": job.tool, "test": job.test, "condition": job.condition,
            "reference": job.cross_check, "round": job.round, "segment": segment,
            "load": delivered, "started_at": started_at,
            "duration_s": round(duration_s, 3), "exit_status": status, "command": command}


@contextmanager
def partition_applied(s: RunSettings):
    """cpusets per role for the run (removed after), and rtgauge itself (with the live
    view's thread, started later) on the housekeeping CPUs."""
    p = s.partition
    if p is None:
        yield
        return
    apply_cpusets(p)
    s.say(p.cpuset_note)
    old_affinity = os.sched_getaffinity(0)
    try:
        if p.housekeeping_cpus:
            if p.cpusets and "housekeeping" in p.cpusets.roles:
                try:
                    p.cpusets.join_self("housekeeping")
                except OSError:
                    pass
            os.sched_setaffinity(0, p.housekeeping_cpus)
        yield
    finally:
        if p.cpusets:
            p.cpusets.remove()
        os.sched_setaffinity(0, old_affinity)


def execute(store, run_id: int, jobs: list[Job], warmup_s: float, progress=None,
            settings: RunSettings | None = None) -> tuple[str, list[JobOutcome]]:
    """Run every job, storing each measurement (each segment) as it ends.
    Returns (run status, outcomes)."""
    s = settings or RunSettings(warmup_s=warmup_s)
    outcomes: list[JobOutcome] = []
    status = "complete"
    with interrupts_flagged(s.clock) as stop, partition_applied(s):
        for job in jobs:
            if progress:
                progress.start_job(job)
            last_doc = None
            try:
                for seg in run_job_segments(job, s, stop, on_tick=progress.tick if progress else None):
                    mid = store.add_measurement(run_id, job_record(seg.job, seg.status, seg.delivered,
                                                                   seg.started_at, seg.duration_s,
                                                                   seg.command, seg.segment), seg.doc)
                    outcomes.append(JobOutcome(seg.job, seg.doc, seg.status, mid, seg.interrupted))
                    last_doc = seg.doc
                    if seg.interrupted:
                        break
            except Interrupted:
                status, s.ended_by = "interrupted", stop.signal
                break
            if progress and last_doc is not None:
                progress.end_job(job, last_doc)
            if stop or (outcomes and outcomes[-1].interrupted):
                status = "interrupted"
                s.ended_by = stop.signal or ("lost" if s.target is not None else None)
                break
    if s.live is not None:
        s.live.close()
    return status, outcomes


def execute_sweeps(store, run_id: int, sweeps: list[SweepJob], say: Callable[[str], None],
                   engine: str | None = None, probes: dict | None = None) -> list[dict]:
    """Run the plan's sweep jobs (plan.SweepJob) into run_id, in order, each storing its
    probes and its result as it goes; the documents of the sweeps' results. The search
    is the same for both kinds (rtgauge/search.py); what differs is the probe."""
    docs = []
    for job in sweeps:
        if job.kind == TIRE_SWEEP:
            docs.append(sweep_and_store(store, run_id, job.spec, say, engine, probes))
        elif job.kind == HIL_SUSTAINED:
            docs.append(sustained_and_store(store, run_id, job.spec, say, engine))
        else:
            raise ValueError(f"unknown sweep kind {job.kind!r}")
    return docs


def execute_interleaved(store, run_ids: list[int], plans: list[list[Job]], warmup_s: float, view, settings):
    """Round 1 of every run, then round 2, ...: a change of the machine during the
    measurement falls on every run alike. Returns (status, outcomes per run)."""
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
