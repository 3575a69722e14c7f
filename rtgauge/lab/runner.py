"""Run one profile on many targets at once: one `rtgauge run --target ADDRESS --db DB`
process a target, each with its own connection, stop flag and run session, all
storing into the lab's shared database.

Each child writes to a log file of its own (LOGDIR/NN-NAME.log), which the lab
process follows and prints with the target's name in front: a child never writes
into a pipe that could break, so it ends its run the same way whatever becomes of
the lab process. The lab process forwards SIGINT, SIGTERM and SIGHUP to every child (they are in sessions of
their own, so a signal reaches them once, through the lab) and waits for them: each
stops its engine on the board, marks its run interrupted and keeps what it measured.
Should the lab process die without a word, each child gets SIGTERM from the kernel
(PR_SET_PDEATHSIG) and stops the same way. A target that fails (unreachable,
refused, failed) is told with its one-sentence reason; the others carry on."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rtgauge import safefile
from rtgauge.lab.config import Lab, Target

PR_SET_PDEATHSIG = 1


@dataclass
class TargetRun:
    target: Target
    address: str                        # the ssh:// address measured
    process: subprocess.Popen | None = None
    run_id: int | None = None           # the run it stored, from its --run-id-file (read_run_id)
    exit_status: int | None = None
    reason: str | None = None           # its last "rtgauge: ..." sentence
    log: Path | None = None             # what it printed, stdout and stderr
    id_file: Path | None = None         # where it writes the id of its run (`rtgauge run --run-id-file`)
    reader: threading.Thread | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


def child_command(lab: Lab, address: str, id_file: Path) -> list[str]:
    """The child's argv; the database goes through its environment (child_env), so a
    password in the URL is in no argv (ps) and in no stored run. The child writes its
    run's id to ID_FILE when it begins the run."""
    cmd = [sys.executable, "-m", "rtgauge", "run", "--no-report", "--profile", lab.profile,
           "--target", address, "--run-id-file", str(id_file)]
    if lab.rounds is not None:
        cmd += ["--rounds", str(lab.rounds)]
    return cmd


_libc = ctypes.CDLL(None, use_errno=True)     # looked up here, not between fork and exec


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the lab process dies."""
    _libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


class LabRunner:
    """with LabRunner(say) as runner:   # SIGINT/SIGTERM/SIGHUP now set runner.stopped, never raise
           if not runner.stopped: runs = runner.run(lab, {target: address}, logs_dir)"""

    def __init__(self, say):
        self.say = say                   # say(text): one line out, from any thread
        self.stopped: int | None = None  # the signal that asked to stop
        self.runs: list[TargetRun] = []
        self._previous: dict[int, object] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> LabRunner:
        stops = [signal.SIGINT, signal.SIGTERM]
        if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:     # a closed terminal; nohup keeps it ignored
            stops.append(signal.SIGHUP)
        for sig in stops:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum, frame) -> None:
        first = self.stopped is None
        self.stopped = signum
        for r in self.runs:
            if r.process is not None and r.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(r.process.pid, signum)
        if first:
            # from the handler: a plain write, no lock that the interrupted thread may hold
            os.write(sys.stderr.fileno(), b"rtgauge: stopping every target; each keeps what it measured.\n")

    def run(self, lab: Lab, addresses: dict[Target, str], logs: Path) -> list[TargetRun]:
        self.runs = [TargetRun(t, addresses[t], log=logs / log_name(i, t), id_file=logs / id_file_name(i, t))
                     for i, t in enumerate(lab.targets, 1)]
        try:
            return self._run(lab)
        except BaseException:
            # a fault here must not leave boards measured by nobody's watch: stop them all
            self._on_signal(signal.SIGINT, None)
            for r in self.runs:
                if r.process is not None:
                    with contextlib.suppress(Exception):
                        r.process.wait(120)
            raise

    def _run(self, lab: Lab) -> list[TargetRun]:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **({"RTGAUGE_DB": lab.db} if lab.db else {}))
        for r in self.runs:              # every process first, then the threads that follow them
            if self.stopped:
                break
            with os.fdopen(safefile.create_new(r.log, 0o644), "w") as out:   # never through a planted link
                r.process = subprocess.Popen(child_command(lab, r.address, r.id_file), stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                             preexec_fn=_die_with_parent)
            self.say(f"[{r.target.name}] started: rtgauge run --target {r.address} (pid {r.process.pid}, "
                     f"log {r.log})")
        for r in self.runs:
            if r.process is not None:
                r.reader = threading.Thread(target=self._follow, args=(r,), daemon=True)
                r.reader.start()
        for r in self.runs:
            if r.process is None:
                r.reason = "not started: the lab run was stopped first"
                continue
            while r.process.poll() is None:
                time.sleep(0.2)          # signals are handled between the sleeps
            r.exit_status = r.process.returncode
            r.reader.join(10)
            r.run_id = read_run_id(r.id_file)
        return self.runs

    def _follow(self, r: TargetRun) -> None:
        """Print the child's log as it grows, until the child has ended and all is read."""
        with open(r.log, encoding="utf-8", errors="replace") as f:
            pending = ""
            while True:
                ended = r.process.poll() is not None
                chunk = f.read()
                pending += chunk
                *lines, pending = pending.split("\n")
                for line in lines:
                    self._line(r, line)
                if ended and not chunk:
                    if pending:
                        self._line(r, pending)
                    return
                if not chunk:
                    time.sleep(0.1)

    def _line(self, r: TargetRun, line: str) -> None:
        if line.startswith("rtgauge: "):
            r.reason = line.removeprefix("rtgauge: ")
        with self._lock:
            self.say(f"[{r.target.name}] {line}")


def log_name(index: int, target: Target) -> str:
    return f"{index:02d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', target.name)[:60]}.log"


def id_file_name(index: int, target: Target) -> str:
    return log_name(index, target).removesuffix(".log") + ".run-id"


def read_run_id(path: Path | None) -> int | None:
    """The run a child stored, from the file it wrote (`rtgauge run --run-id-file`), or
    None when it stored none (it failed before beginning its run)."""
    try:
        with open(path, encoding="ascii") as f:      # a line of digits: a few bytes
            text = f.read(64).split("\n", 1)[0]
    except (OSError, TypeError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and 0 < int(text) < 2**63 else None
