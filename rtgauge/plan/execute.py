"""Run a plan: for each job start its load, run the engine (or the cross-check tool),
stop the load, store the measurement in its own transaction.

Interruption (Ctrl-C or SIGTERM): the running measurement is asked to stop (SIGTERM;
the engine and cyclictest both print what they measured so far), it is stored
marked interrupted, the load is stopped, the run is marked interrupted, and the
caller exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rtgauge.enginebin import engine_path
from rtgauge.loads import make_load
from rtgauge.plan import Job
from rtgauge.tools import cyclictest

STOP_GRACE_S = 15.0


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived before a measurement started."""


class StopFlag:
    """Set by SIGINT/SIGTERM. Checked between steps rather than raised from the
    handler, so a signal never lands in the middle of a database transaction."""

    def __init__(self) -> None:
        self.signal: str | None = None

    def __bool__(self) -> bool:
        return self.signal is not None

    def check(self) -> None:
        if self.signal:
            raise Interrupted(self.signal)

    def sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.check()
            time.sleep(min(0.1, max(0.0, end - time.monotonic())))


@dataclass
class JobOutcome:
    job: Job
    doc: dict
    status: int
    measurement_id: int | None
    interrupted: bool


@contextmanager
def interrupts_flagged():
    """Within the block SIGINT and SIGTERM set the returned StopFlag."""
    flag = StopFlag()

    def handler(signum, frame):
        flag.signal = signal.Signals(signum).name

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield flag
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def failure_document(job: Job, error: str) -> dict:
    return {"schema": 1, "test": job.test, "ok": False, "interrupted": False, "error": error,
            "params": {}, "env": {}, "metrics": {}, "verdicts": {}}


def job_command(job: Job, out_path: str) -> list[str]:
    if job.tool == "engine":
        return [engine_path(), job.test, "--out", out_path, *job.engine_args()]
    if job.tool == "cyclictest":
        return cyclictest.command(job.options, job.cpus, out_path)
    raise ValueError(f"unknown tool {job.tool}")


def read_document(job: Job, out_path: Path, status: int, interrupted: bool, stderr: str) -> dict:
    """The job's result as an engine-contract document, also when the tool failed."""
    try:
        raw = json.loads(out_path.read_text())
    except (OSError, ValueError):
        last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {status}"
        return failure_document(job, f"{job.tool} produced no result: {last}")
    if job.tool == "cyclictest":
        return cyclictest.to_document(raw, job.options, job.cpus, status, interrupted)
    return raw


def run_job(job: Job, warmup_s: float, stop: StopFlag, on_tick=None) -> tuple[dict, int, bool, dict]:
    """Run one job under its load; returns (document, exit status, interrupted, load delivered).
    An interruption before the measurement starts raises Interrupted (nothing to store);
    during it, the partial result comes back with interrupted=True."""
    load = make_load(job.condition)
    with tempfile.TemporaryDirectory(prefix="rtgauge-job-") as tmp:
        out_path = Path(tmp) / "result.json"
        err_path = Path(tmp) / "stderr.txt"
        interrupted = False
        proc = None
        try:
            stop.check()
            load.start()
            if job.condition != "idle" and warmup_s:
                stop.sleep(warmup_s)
            cmd = job_command(job, str(out_path))
            with open(err_path, "w") as err:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=err)
                deadline = time.monotonic() + job.expected_s * 1.5 + 60
                started = time.monotonic()
                while proc.poll() is None:
                    if stop:
                        interrupted = True
                        stop_child(proc)
                        break
                    if on_tick:
                        on_tick(time.monotonic() - started)
                    if time.monotonic() > deadline:
                        proc.kill()
                        proc.wait()
                        break
                    time.sleep(0.1)
            interrupted = interrupted or bool(stop)
            status = proc.returncode
            doc = read_document(job, out_path, status, interrupted, err_path.read_text())
        finally:
            if proc is not None and proc.poll() is None:
                stop_child(proc)
            delivered = load.stop()
    if interrupted:
        doc["interrupted"] = True
    return doc, status, interrupted, delivered


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


def job_record(job: Job, status: int, delivered: dict, started_at: str, duration_s: float,
               command: list[str]) -> dict:
    return {"name": job.name, "tool": job.tool, "test": job.test, "condition": job.condition,
            "reference": job.reference, "load": delivered, "started_at": started_at,
            "duration_s": round(duration_s, 3), "exit_status": status, "command": command}


def execute(store, run_id: int, jobs: list[Job], warmup_s: float, progress=None) -> tuple[str, list[JobOutcome]]:
    """Run every job, storing each as it ends. Returns (run status, outcomes)."""
    outcomes: list[JobOutcome] = []
    status = "complete"
    with interrupts_flagged() as stop:
        for job in jobs:
            if progress:
                progress.start_job(job)
            started_at, t0 = now_iso(), time.monotonic()
            command = job_command(job, "RESULT") if job.tool == "engine" else [job.tool]
            try:
                doc, code, interrupted, delivered = run_job(
                    job, warmup_s, stop, on_tick=progress.tick if progress else None)
            except Interrupted:
                status = "interrupted"
                break
            mid = store.add_measurement(run_id, job_record(job, code, delivered, started_at,
                                                           time.monotonic() - t0, command), doc)
            outcomes.append(JobOutcome(job, doc, code, mid, interrupted))
            if progress:
                progress.end_job(job, doc)
            if interrupted or stop:
                status = "interrupted"
                break
    return status, outcomes
