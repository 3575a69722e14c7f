"""The live view of a long run: current max, p99 and per-CPU max, read from the
engine's --samples CSV file as its collector flushes it (every 50 ms).

The reader is a plain thread of rtgauge (SCHED_OTHER), which the run pins to the
housekeeping CPUs when there are any, so following the run never takes time from the
measured CPUs. It reads only what was appended since the last look."""

from __future__ import annotations

import threading
from pathlib import Path

BIN_NS = 1000          # 1 µs bins for the p99
MAX_BINS = 100_000     # up to 100 ms; above counts in the last bin


class LatencyTally:
    """Counts of Ti per 1 µs bin and the max, for one CPU or all."""

    def __init__(self) -> None:
        self.bins: dict[int, int] = {}
        self.count = 0
        self.max_ns = 0

    def add(self, ti_ns: int) -> None:
        b = min(max(ti_ns, 0) // BIN_NS, MAX_BINS)
        self.bins[b] = self.bins.get(b, 0) + 1
        self.count += 1
        if ti_ns > self.max_ns:
            self.max_ns = ti_ns

    def percentile_ns(self, q: float) -> int | None:
        if not self.count:
            return None
        rank = q * self.count
        seen = 0
        for b in sorted(self.bins):
            seen += self.bins[b]
            if seen >= rank:
                return (b + 1) * BIN_NS
        return self.max_ns


class SamplesFollower:
    """Follows one samples file; thread index i is pinned to cpus[i % len(cpus)]."""

    def __init__(self, path: Path, cpus: list[int]):
        self.path, self.cpus = path, cpus
        self.offset = 0
        self.partial = b""
        self.all = LatencyTally()
        self.per_cpu: dict[int, LatencyTally] = {}
        self.recent_max_ns = 0        # max over the last poll: the "current" max

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return 0
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        n, recent = 0, 0
        for line in lines:
            parts = line.split(b",")
            if len(parts) < 4 or not parts[0].isdigit():
                continue              # the header
            thread, ti = int(parts[0]), int(parts[3])
            cpu = self.cpus[thread % len(self.cpus)] if self.cpus else thread
            self.all.add(ti)
            self.per_cpu.setdefault(cpu, LatencyTally()).add(ti)
            recent = max(recent, ti)
            n += 1
        if n:
            self.recent_max_ns = recent
        return n

    def summary(self) -> str:
        def us(ns):
            return "-" if ns is None else f"{ns / 1000:.0f}"
        if not self.all.count:
            return "live: waiting for samples"
        cpus = "  ".join(f"cpu{c} max {us(t.max_ns)} p99 {us(t.percentile_ns(0.99))}"
                         for c, t in sorted(self.per_cpu.items()))
        return (f"live: now {us(self.recent_max_ns)} µs, max {us(self.all.max_ns)} µs, "
                f"p99 {us(self.all.percentile_ns(0.99))} µs  |  {cpus}")


class LiveView:
    """A background thread polling a follower and handing its summary to show()."""

    def __init__(self, show, period_s: float = 1.0):
        self.show, self.period_s = show, period_s
        self.follower: SamplesFollower | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last = ""

    def follow(self, path: Path, cpus: list[int]) -> None:
        self.follower = SamplesFollower(path, cpus)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rtgauge-live", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            f = self.follower
            if f is not None:
                f.poll()
                self.last = f.summary()
                try:
                    self.show(self.last)
                except Exception:      # the display must never end a measurement
                    pass

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
