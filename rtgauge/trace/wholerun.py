"""Tracing the measured CPUs for the whole of a latency job, for the attribution of
every spike (docs/attribution.md; the analysis is rtgauge.analysis.run.spikes).

A private trace instance (instances/rtgauge-attr-<pid>) with the "mono" clock (the
engine's CLOCK_MONOTONIC deadlines line up with it) records the scheduler, interrupt,
softirq, timer-vector, IPI and NMI events the kernel offers, on the measured CPUs only.
A reader (placed on the CPUs that are not measured) drains trace_pipe into a file while
the job runs, so the ring buffer does not wrap; at the end the rest of the buffer is
appended and the instance removed. The reader polls (non-blocking reads every
POLL_S): a reader that blocks in trace_pipe, as `cat` does, is woken by an irq_work
interrupt on the traced CPU each time an event comes after it emptied the buffer, so
the measurement would add to the measured CPU an interrupt of its own, up to tens of
thousands a second, and read it in its own trace (docs/attribution.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rtgauge.loads.supervise import die_with_parent
from rtgauge.trace import InstanceFiles, cpu_mask

EVENTS = ("sched/sched_switch", "sched/sched_wakeup",
          "irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit",
          "timer/hrtimer_expire_entry", "timer/hrtimer_expire_exit", "nmi/nmi_handler",
          "irq_vectors/local_timer_entry", "irq_vectors/local_timer_exit",
          "irq_vectors/reschedule_entry", "irq_vectors/reschedule_exit",
          "irq_vectors/call_function_entry", "irq_vectors/call_function_exit",
          "irq_vectors/call_function_single_entry", "irq_vectors/call_function_single_exit",
          "irq_vectors/irq_work_entry", "irq_vectors/irq_work_exit",
          "csd/csd_function_entry", "csd/csd_function_exit")
BUFFER_KB = 8192        # per CPU; the reader drains it, this only absorbs its delays
POLL_S = 0.02           # the reader's pause when trace_pipe is empty (a few 100 kB of trace a CPU)

# The reader: trace_pipe (argv[1]) to stdout, non-blocking, until SIGTERM; then what is
# left is drained (tracing is off by then) so nothing read is lost.
READER = """
import os, signal, sys, time
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
while True:
    try:
        data = os.read(fd, 1 << 20)
    except BlockingIOError:
        data = b""
    if data:
        while data:
            data = data[os.write(1, data):]
        continue
    if stop:
        break
    time.sleep(float(sys.argv[2]))
"""


def remove_stale(tracefs: str) -> None:
    """Instances left by an rtgauge that was killed (its pid is gone) are removed."""
    for inst in Path(tracefs, "instances").glob("rtgauge-attr-*"):
        pid = inst.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path("/proc", pid).exists():
            try:
                (inst / "tracing_on").write_text("0")
                inst.rmdir()
            except OSError:
                pass


class WholeRunTrace(InstanceFiles):
    def __init__(self, tracefs: str, cpus: list[int], out: Path):
        self.tracefs, self.cpus, self.out = tracefs, cpus, out
        self.instance: Path | None = None
        self.reader: subprocess.Popen | None = None
        self.events: list[str] = []
        self.missing: list[str] = []

    def start(self) -> None:
        remove_stale(self.tracefs)
        self.instance = Path(self.tracefs, "instances", f"rtgauge-attr-{os.getpid()}")
        if self.instance.exists():
            self.instance.rmdir()
        self.instance.mkdir()
        self._write("tracing_on", "0")
        self._write("trace_clock", "mono")
        self._write("buffer_size_kb", str(BUFFER_KB))
        self._write("tracing_cpumask", cpu_mask(self.cpus))
        for ev in EVENTS:
            enable = self.instance / "events" / ev / "enable"
            if enable.exists():
                enable.write_text("1")
                self.events.append(ev.replace("/", ":"))
            else:
                self.missing.append(ev.replace("/", ":"))
        self._write("trace", "")
        others = sorted(set(os.sched_getaffinity(0)) - set(self.cpus))
        out = open(self.out, "wb")
        try:
            self.reader = subprocess.Popen(
                [sys.executable, "-c", READER, str(self.instance / "trace_pipe"), str(POLL_S)], stdout=out,
                stdin=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,    # gone with rtgauge, even killed
                preexec_fn=die_with_parent((lambda: os.sched_setaffinity(0, others)) if others else None))
        finally:
            out.close()
        self._write("tracing_on", "1")

    def finish(self) -> dict:
        """Stop tracing, let the reader drain, append what is left; returns a note."""
        self._write("tracing_on", "0")
        size, still = -1, 0
        end = time.monotonic() + 5
        while time.monotonic() < end and still < 3:      # the reader caught up when the file stops growing
            time.sleep(0.1)
            now = self.out.stat().st_size if self.out.exists() else 0
            still = still + 1 if now == size else 0
            size = now
        self._stop_reader()
        rest = self._read("trace")
        with open(self.out, "a") as f:
            f.write(rest)
        self.remove()
        return {"events": self.events, "missing_events": self.missing, "clock": "mono",
                "trace_bytes": self.out.stat().st_size}

    def _stop_reader(self) -> None:
        if self.reader is not None and self.reader.poll() is None:
            self.reader.send_signal(signal.SIGTERM)
            try:
                self.reader.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.reader.kill()
                self.reader.wait()
        self.reader = None

    def remove(self) -> None:
        self._stop_reader()
        if self.instance is not None and self.instance.exists():
            try:
                self._write("tracing_on", "0")
                self.instance.rmdir()
            except OSError:
                pass
        self.instance = None
