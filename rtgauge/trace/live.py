"""The live view of a long run, and its metrics file, read from the engine's status:
one JSON line per window (`rtgauge-engine latency --status`, docs/samples.md) with each
measuring thread's cycles, min/avg/max/p99 wake-up latency and misses in that window.

The status costs the measurement nothing it would not do anyway (the engine's
collector writes a line a window, whatever the rate), so following a run does not
change what it measures; the raw samples file is left to what needs every sample
(--attribute). The reader is a plain thread of rtgauge (SCHED_OTHER), which the run
pins to the housekeeping CPUs when there are any; it reads only what was appended
since the last look, once a second."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rich.table import Table

from rtgauge.report.safe import markup


@dataclass
class CpuFigures:
    """One CPU's figures in one job, summed over the windows read so far."""
    cycles: int = 0
    misses: int = 0
    skipped: int = 0                   # deadlines skipped (no wake-up measured: held off its CPU)
    windows: int = 0
    max_ns: int | None = None          # the largest wake-up latency so far
    last_max_ns: int | None = None     # the last window's
    last_p99_ns: int | None = None     # the last window's p99 (the largest of the CPU's threads')
    last_end_ns: int | None = None     # CLOCK_MONOTONIC end of the last window


def _larger(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


class StatusFollower:
    """Follows one status file: the windows appended since the last poll, complete
    lines only (the engine may be writing the next one)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.offset = 0
        self.partial = b""

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        windows = []
        for line in lines:
            try:
                w = json.loads(line)
            except ValueError:
                continue
            if isinstance(w, dict) and isinstance(w.get("threads"), list):
                windows.append(w)
        return windows


class LiveTally:
    """Per (job, condition, CPU): cycles, misses, the running max and the last
    window's max and p99, from the windows of every segment of every job."""

    def __init__(self) -> None:
        self.cpus: dict[tuple[str, str, int], CpuFigures] = {}
        self.windows = 0

    def add(self, job: str, condition: str, window: dict) -> None:
        self.windows += 1
        end_ns = int(window.get("start_ns", 0) + window.get("window_s", 0) * 1e9)
        seen: set[int] = set()
        for t in window["threads"]:
            cpu = int(t.get("cpu", -1))
            f = self.cpus.setdefault((job, condition, cpu), CpuFigures())
            if cpu not in seen:       # the first of this CPU's threads in this window
                seen.add(cpu)
                f.windows += 1
                f.last_max_ns = f.last_p99_ns = None
                f.last_end_ns = end_ns
            f.cycles += int(t.get("cycles") or 0)
            f.misses += int(t.get("misses") or 0)
            f.skipped += int(t.get("skipped") or 0)
            f.max_ns = _larger(f.max_ns, t.get("max"))
            f.last_max_ns = _larger(f.last_max_ns, t.get("max"))
            f.last_p99_ns = _larger(f.last_p99_ns, t.get("p99"))

    def table(self):
        """A rich table: a row per job and CPU."""
        def us(ns):
            return "-" if ns is None else f"{ns / 1000:,.0f}"
        t = Table(title="live (µs)", title_justify="left", box=None, pad_edge=False)
        for name, justify in (("job", "left"), ("cpu", "right"), ("max", "right"), ("window max", "right"),
                              ("window p99", "right"), ("misses", "right"), ("skipped", "right"),
                              ("cycles", "right")):
            t.add_column(name, justify=justify, no_wrap=justify == "right", overflow="fold")
        for (job, _condition, cpu), f in sorted(self.cpus.items()):
            t.add_row(markup(job), "any" if cpu < 0 else str(cpu), us(f.max_ns), us(f.last_max_ns),
                      us(f.last_p99_ns), f"{f.misses:,}", f"{f.skipped:,}", f"{f.cycles:,}")
        return t


class LiveView:
    """A background thread polling the current job's status once a second; on new
    windows it hands the table to show() and rewrites the metrics file."""

    def __init__(self, show: Callable | None = None, metrics=None, period_s: float = 1.0,
                 say: Callable[[str], None] | None = None):
        self.show, self.metrics, self.period_s, self.say = show, metrics, period_s, say
        self.tally = LiveTally()
        self.follower: StatusFollower | None = None
        self.job = self.condition = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def follow(self, path: Path, job: str, condition: str) -> None:
        """From now on, the status at `path` of `job` (what is left of the last one read first)."""
        self.poll()
        with self._lock:
            self.follower, self.job, self.condition = StatusFollower(path), job, condition
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rtgauge-live", daemon=True)
            self._thread.start()

    def poll(self) -> int:
        """Read the new windows; returns how many."""
        with self._lock:
            if self.follower is None:
                return 0
            windows = self.follower.poll()
            for w in windows:
                self.tally.add(self.job, self.condition, w)
            if windows:
                self._publish()
            return len(windows)

    def _publish(self) -> None:
        if self.metrics is not None:
            try:
                self.metrics.write(self.tally)
            except OSError as e:     # said once; the measurement goes on
                if self.say:
                    text = (f"the metrics file {self.metrics.path} could not be written ({e.strerror or e}); "
                            "it is no longer updated.")
                    self.say(f"[yellow]{markup(text, None)}[/]")
                self.metrics = None
        if self.show is not None:
            try:
                self.show(self.tally.table())
            except Exception:      # the display must never end a measurement
                pass

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.poll()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poll()
