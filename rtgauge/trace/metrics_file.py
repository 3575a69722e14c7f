"""`run --metrics-file PATH`: the live figures as a Prometheus text exposition file, for
node_exporter's textfile collector in long soaks (docs/loads.md).

The file is rewritten whole at every new window of the engine's status through the one
writer (rtgauge/safefile.py): written to a temporary file in the same directory, then
renamed over PATH, so a reader sees the previous file or the new one, never half of one.
A PATH that is a symbolic link, a device, a FIFO or a directory is refused when the run
starts (the file would land wherever the link points, or replace the device); `-` or
/dev/stdout append each exposition to that stream. Counters are named with
_total as the text format node_exporter reads expects; the file ends with `# EOF`
(a comment to that format)."""

from __future__ import annotations

import time

from rtgauge import safefile

NS = 1e-9

# name, type, help, the figure of a CpuFigures (live.py)
FAMILIES = (
    ("rtgauge_latency_max_seconds", "gauge", "largest wake-up latency of the job on the CPU so far",
     lambda f: None if f.max_ns is None else f.max_ns * NS),
    ("rtgauge_latency_window_max_seconds", "gauge", "largest wake-up latency in the last window read",
     lambda f: None if f.last_max_ns is None else f.last_max_ns * NS),
    ("rtgauge_latency_window_p99_seconds", "gauge", "99th percentile of the wake-up latency in the last window read",
     lambda f: None if f.last_p99_ns is None else f.last_p99_ns * NS),
    ("rtgauge_cycles_total", "counter", "wake-ups measured", lambda f: f.cycles),
    ("rtgauge_misses_total", "counter", "cycles that ended after the next deadline", lambda f: f.misses),
    ("rtgauge_skipped_total", "counter", "deadlines skipped after a late wake-up (none measured for them)",
     lambda f: f.skipped),
    ("rtgauge_windows_total", "counter", "status windows read", lambda f: f.windows),
    ("rtgauge_last_window_end_timestamp_seconds", "gauge",
     "wall-clock end of the last window read (a soak that stalls stops moving it)",
     lambda f: None if f.last_end_ns is None else _wall_of_monotonic(f.last_end_ns)),
)


def _wall_of_monotonic(ns: int) -> float:
    """A CLOCK_MONOTONIC instant (the engine's, on this machine) as Unix time."""
    return round(time.time() - (time.monotonic_ns() - ns) * NS, 3)


def _label(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v) -> str:
    return str(v) if isinstance(v, int) else repr(round(float(v), 9))


def exposition(tally) -> str:
    """The text of the file for a LiveTally (live.py)."""
    out = []
    for name, kind, help_text, figure in FAMILIES:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        for (job, condition, cpu), f in sorted(tally.cpus.items()):
            v = figure(f)
            if v is None:
                continue
            labels = f'job="{_label(job)}",condition="{_label(condition)}",cpu="{"any" if cpu < 0 else cpu}"'
            out.append(f"{name}{{{labels}}} {_number(v)}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


class MetricsFile:
    """The file at `path`, checked when the run starts (one sentence, exit 2)."""

    def __init__(self, path: str):
        self.path = path
        safefile.check_option("--metrics-file", path, "give a regular file in a writable directory "
                              "(node_exporter's --collector.textfile.directory)")

    def write(self, tally) -> None:
        """Replace the file with the figures of `tally`, atomically (an OSError when the
        name became something the writer refuses; the live view says so)."""
        safefile.write_text(self.path, exposition(tally))
