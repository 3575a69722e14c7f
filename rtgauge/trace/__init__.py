"""Catching the cause of a spike with tracefs.

A private trace instance (instances/rtgauge-<pid>, so the global trace and other users
are left alone) records scheduler, interrupt, timer and IPI events into a ring buffer
on the measured CPUs only. The engine runs with --max-latency-us N --break, so it
stops at the first wake-up later than N; rtgauge then writes a marker into the trace
(trace_marker), stops it, and keeps the last lines, which show what ran on that CPU
just before. Where tracefs is not mounted it is mounted at /sys/kernel/tracing (root,
unless --no-mount-tracefs); where it cannot be had, say so once and measure without."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rtgauge.loads.partition import join_placement

CANDIDATES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
EVENTS = ("sched/sched_switch", "sched/sched_wakeup", "sched/sched_waking", "sched/sched_migrate_task",
          "irq/irq_handler_entry", "irq/irq_handler_exit", "irq/softirq_entry", "irq/softirq_exit",
          "timer/hrtimer_expire_entry", "timer/hrtimer_expire_exit", "ipi/ipi_send_cpu",
          "irq_vectors/local_timer_entry", "irq_vectors/local_timer_exit")
TAIL_LINES = 4000
BUFFER_KB = 4096


def tracefs_supported() -> bool:
    try:
        return any(line.split()[-1] == "tracefs" for line in Path("/proc/filesystems").read_text().splitlines())
    except OSError:
        return False


def find_tracefs() -> str | None:
    for path in CANDIDATES:
        if os.path.exists(os.path.join(path, "trace_marker")):
            return path
    return None


def cpu_mask(cpus: list[int]) -> str:
    """[1, 3] -> 'a': tracing_cpumask is a hexadecimal bit mask, 32-bit groups joined by commas."""
    value = sum(1 << c for c in cpus)
    groups = []
    while True:
        groups.append(f"{value & 0xffffffff:x}")
        value >>= 32
        if not value:
            break
    return ",".join(reversed(groups))


@dataclass
class Tracefs:
    """tracefs for a run: found, or mounted where it is expected (unless the user said
    not to) and left mounted, as rtla, trace-cmd and libtracefs do: it is the system's,
    and another tool may be using it by the end of the run."""
    path: str | None
    note: str
    mounted_here: bool = False

    @classmethod
    def open(cls, allow_mount: bool) -> "Tracefs":
        found = find_tracefs()
        if found:
            return cls(found, f"tracefs at {found}")
        if not tracefs_supported():
            return cls(None, "this kernel has no tracefs (CONFIG_TRACING off); tracing is skipped")
        if not allow_mount:
            return cls(None, "tracefs is not mounted and --no-mount-tracefs was given (`mount -t tracefs nodev "
                             "/sys/kernel/tracing` to trace); tracing is skipped")
        p = subprocess.run(["mount", "-t", "tracefs", "nodev", CANDIDATES[0]], capture_output=True, text=True)
        if p.returncode != 0 or not find_tracefs():
            why = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"mount exit status {p.returncode}"
            return cls(None, f"could not mount tracefs ({why}); tracing is skipped")
        return cls(CANDIDATES[0], f"tracefs was not mounted: mounted it at {CANDIDATES[0]} "
                                  "(left mounted, as rtla and trace-cmd do)", True)


class InstanceFiles:
    """A trace instance's control files (self.instance: its directory)."""
    instance: Path | None = None

    def _write(self, name: str, value: str) -> None:
        with open(self.instance / name, "w") as f:
            f.write(value)

    def _read(self, name: str) -> str:
        try:
            return (self.instance / name).read_text(errors="replace")
        except OSError:
            return ""


@dataclass
class ThresholdTrace(InstanceFiles):
    """One trace instance around one measurement."""
    tracefs: str
    cpus: list[int]
    threshold_us: int
    cgroup_procs: str | None = None     # the measuring cpuset, which holds the traced CPUs
    instance: Path | None = None
    events: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.instance = Path(self.tracefs, "instances", f"rtgauge-{os.getpid()}")
        if self.instance.exists():
            self.instance.rmdir()
        self.instance.mkdir()
        self._write("tracing_on", "0")
        self._write("buffer_size_kb", str(BUFFER_KB))
        self._write("tracing_cpumask", cpu_mask(self.cpus))
        self.events = []
        for ev in EVENTS:
            enable = self.instance / "events" / ev / "enable"
            if enable.exists():
                enable.write_text("1")
                self.events.append(ev.replace("/", ":"))
        self._write("trace", "")          # empty the buffer
        self._write("tracing_on", "1")
        self.mark(f"rtgauge: tracing cpus {','.join(map(str, self.cpus))}, threshold {self.threshold_us} us")

    def mark(self, text: str, cpu: int | None = None) -> None:
        """A marker lands in the buffer of the CPU that writes it, and only a traced CPU
        has one: write it from a short-lived process on a traced CPU."""
        cpu = self.cpus[0] if cpu is None or cpu not in self.cpus else cpu
        place = join_placement([cpu], self.cgroup_procs)
        subprocess.run(["sh", "-c", 'printf %s "$1" > "$2"', "sh", text, str(self.instance / "trace_marker")],
                       preexec_fn=place, capture_output=True, timeout=10)

    def finish(self, doc: dict) -> dict:
        """Mark the breach (if any), stop, keep the tail; remove the instance."""
        breach = breach_of(doc, self.threshold_us)
        marker = None
        if breach:
            marker = (f"rtgauge: latency {breach['max_us']:.1f} us > threshold {self.threshold_us} us "
                      f"on cpu {breach['cpu']}")
            self.mark(marker, breach["cpu"])
        self._write("tracing_on", "0")
        lines = self._read("trace").splitlines()
        self.remove()
        return {"threshold_us": self.threshold_us, "cpus": self.cpus, "events": self.events,
                "breached": bool(breach), "breach": breach, "marker": marker,
                "lines_kept": min(len(lines), TAIL_LINES),
                "tail": [ln for ln in lines[-TAIL_LINES:] if not ln.startswith("#")]}

    def remove(self) -> None:
        if self.instance is not None and self.instance.exists():
            try:
                self.instance.rmdir()
            except OSError:
                pass
        self.instance = None



def breach_of(doc: dict, threshold_us: int) -> dict | None:
    """The worst per-thread Ti above the threshold, from the engine document."""
    metrics = doc.get("metrics") or {}
    threads = {t.get("index"): t.get("cpu") for t in (doc.get("env") or {}).get("threads") or []}
    worst = None
    for name, m in metrics.items():
        if not name.startswith("ti#") or not isinstance(m, dict) or m.get("max") is None:
            continue
        idx = int(name[3:])
        if m["max"] > threshold_us * 1000 and (worst is None or m["max"] > worst["max_us"] * 1000):
            worst = {"thread": idx, "cpu": threads.get(idx), "max_us": m["max"] / 1000}
    if worst is None and (metrics.get("ti") or {}).get("max", 0) > threshold_us * 1000:
        worst = {"thread": None, "cpu": None, "max_us": metrics["ti"]["max"] / 1000}
    return worst
