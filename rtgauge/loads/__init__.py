"""Load conditions: what runs beside a measurement.

A condition is started before a job and stopped after it, also when the job fails or
rtgauge is interrupted. Load processes run in their own session (so a Ctrl-C aimed
at the measurement does not stop them early) and are killed with rtgauge itself if it
dies (PR_SET_PDEATHSIG). stop() returns what the load delivered, so a "loaded"
measurement is checkable."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rtgauge.errors import UserError

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """preexec_fn: the kernel kills the load when rtgauge exits, however it exits."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Load:
    """No load: the machine as it is."""

    name = "idle"
    description = "nothing started beside the measurement"

    def start(self) -> None:
        pass

    def stop(self) -> dict:
        return {"condition": self.name}

    def running(self) -> bool:
        return True


class StressCpu(Load):
    """One stress-ng CPU worker per online CPU, at SCHED_OTHER."""

    name = "cpu"
    description = "stress-ng --cpu: one CPU-bound worker per online CPU"

    def __init__(self, workers: int | None = None):
        self.workers = workers or os.cpu_count() or 1
        self.proc: subprocess.Popen | None = None
        self.tmp: tempfile.TemporaryDirectory | None = None
        self.started = 0.0

    def command(self, yaml_path: str) -> list[str]:
        exe = shutil.which("stress-ng")
        if not exe:
            raise UserError("the cpu load needs stress-ng, which is not installed; "
                            "install it with `apt-get install stress-ng`.")
        # not --quiet: it also drops the metrics from the YAML file
        return [exe, "--cpu", str(self.workers), "--timeout", "0", "--metrics", "--yaml", yaml_path]

    def start(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="rtgauge-load-")
        cmd = self.command(str(Path(self.tmp.name) / "metrics.yaml"))
        log = Path(self.tmp.name) / "log.txt"
        with open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        self.started = time.monotonic()
        time.sleep(0.2)
        if self.proc.poll() is not None:
            err = log.read_text(errors="replace").strip().splitlines()
            raise UserError(f"stress-ng exited at once ({err[-1] if err else 'no message'}); "
                            "run `stress-ng --cpu 1 -t 1` by hand to see why.")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> dict:
        delivered = {"condition": self.name, "tool": "stress-ng", "workers": self.workers}
        if self.proc is None:
            return delivered
        delivered["alive_until_stop"] = self.proc.poll() is None
        delivered["wall_s"] = round(time.monotonic() - self.started, 3)
        stop_process_group(self.proc)
        delivered.update(read_stress_ng_metrics(Path(self.tmp.name) / "metrics.yaml"))
        self.tmp.cleanup()
        self.proc = None
        return delivered


def stop_process_group(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGINT the whole group (stress-ng then writes its metrics), SIGKILL what remains."""
    for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # the leader is gone; make sure none of its workers outlive it
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def read_stress_ng_metrics(path: Path) -> dict:
    """bogo-ops and CPU seconds from stress-ng's --yaml file (a flat subset of YAML)."""
    try:
        text = path.read_text()
    except OSError:
        return {"metrics": "stress-ng wrote no metrics"}
    out: dict = {}
    in_metrics = False
    for line in text.splitlines():
        if line.startswith("metrics:"):
            in_metrics = True
            continue
        if in_metrics and line and not line.startswith(" "):
            break
        if in_metrics and ":" in line:
            key, _, value = line.strip().lstrip("- ").partition(":")
            key, value = key.strip(), value.strip()
            if key in ("bogo-ops", "bogo-ops-per-second-real-time", "user-time", "system-time",
                       "wall-clock-time"):
                try:
                    out[key.replace("-", "_")] = float(value)
                except ValueError:
                    pass
    if "user_time" in out or "system_time" in out:
        out["cpu_s"] = round(out.get("user_time", 0.0) + out.get("system_time", 0.0), 3)
    return out


CONDITIONS: dict[str, type[Load]] = {"idle": Load, "cpu": StressCpu}


def make_load(condition: str) -> Load:
    try:
        return CONDITIONS[condition]()
    except KeyError:
        raise UserError(f"unknown load condition {condition!r}; known conditions are "
                        f"{', '.join(sorted(CONDITIONS))}.") from None
