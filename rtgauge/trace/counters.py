"""What else happened on each measured CPU during a job: interrupts per source
(/proc/interrupts deltas), softirqs (/proc/softirqs), SMIs (MSR 0x34, where
/dev/cpu/N/msr is readable), the hypervisor's steal time (/proc/stat: time the
virtual CPU wanted to run while the host ran something else) and the measuring
threads' context switches (from the engine document's env.threads). Stored in the
document's env under "counters".

Also whether an idle condition was idle (others_load, stored as env.others_load): the
measured CPUs' busy time in /proc/stat over the measurement, minus the CPU time of this
run's own processes (rtgauge and the tool it measured with, from getrusage), is what
others ran beside the measurement; at NOT_IDLE_SHARE of the measured CPUs' time or more
the row is "not idle" (docs/loads.md, "Is idle idle?")."""

from __future__ import annotations

import os
import resource
import struct
import time
from dataclasses import dataclass

MSR_SMI_COUNT = 0x34


def parse_table(text: str) -> dict[str, list[int]]:
    """/proc/interrupts or /proc/softirqs: {source: [count per CPU column]}; the
    source is the first column plus its description (e.g. 'LOC Local timer interrupts',
    '36 virtio1-req.0')."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    table: dict[str, list[int]] = {}
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        parts = rest.split()
        counts = []
        for p in parts[:ncpu]:
            if not p.isdigit():
                break
            counts.append(int(p))
        if not counts:
            continue
        desc = " ".join(parts[len(counts):])
        if len(counts) < ncpu:        # ERR/MIS: one system-wide number
            continue
        label = head.strip()
        # device lines carry the chip and the hwirq before the name; keep the name
        table[f"{label} {desc.split()[-1] if label.isdigit() and desc else desc}".strip()] = counts
    return table


def cpu_columns(text: str) -> list[int]:
    """The CPU numbers of the header columns ('CPU0 CPU1 ...')."""
    return [int(c[3:]) for c in text.splitlines()[0].split() if c.startswith("CPU")] if text else []


def read_file(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def read_smi_counts(cpus: list[int]) -> tuple[dict[int, int] | None, str]:
    counts = {}
    for cpu in cpus:
        path = f"/dev/cpu/{cpu}/msr"
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None, f"unavailable: {path} does not exist (needs the msr driver, `modprobe msr`)"
        except OSError as e:
            return None, f"unavailable: cannot open {path} ({e.strerror})"
        try:
            counts[cpu] = struct.unpack("<Q", os.pread(fd, 8, MSR_SMI_COUNT))[0] & 0xffffffff
        except OSError as e:
            return None, f"unavailable: MSR 0x34 not readable on cpu {cpu} ({e.strerror}; not an Intel CPU or a VM)"
        finally:
            os.close(fd)
    return counts, "MSR 0x34"


@dataclass
class Snapshot:
    interrupts: str
    softirqs: str
    smi: dict[int, int] | None
    smi_note: str
    stat: str = ""
    own_s: float | None = None     # CPU time of this process and its reaped children so far (own_cpu_s)
    mono_s: float | None = None    # CLOCK_MONOTONIC when /proc/stat was read (others_load's span)


def own_cpu_s() -> float:
    """CPU time (user + system) of rtgauge (every thread) and of the children it has
    waited for (the engine or cyclictest of a job once it ended)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def take_snapshot(cpus: list[int]) -> Snapshot:
    smi, note = read_smi_counts(cpus)
    return Snapshot(read_file("/proc/interrupts"), read_file("/proc/softirqs"), smi, note, read_file("/proc/stat"),
                    own_cpu_s(), time.monotonic())


def cpu_times(stat: str) -> dict[int, list[int]]:
    """/proc/stat: {cpu: [user, nice, system, idle, iowait, irq, softirq, steal, ...]} in clock ticks."""
    out = {}
    for line in stat.splitlines():
        head, _, rest = line.partition(" ")
        if head.startswith("cpu") and head[3:].isdigit():
            try:
                out[int(head[3:])] = [int(x) for x in rest.split()]
            except ValueError:
                continue
    return out


def steal_between(before: str, after: str, cpus: list[int]) -> dict:
    """Steal time on each measured CPU during the job (ms, at the clock tick's resolution)
    and its share of the CPU's time; a bare machine reports 0."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    b, a = cpu_times(before), cpu_times(after)
    per_cpu, share = {}, {}
    for cpu in cpus:
        if cpu not in a or cpu not in b or len(a[cpu]) < 8 or len(b[cpu]) < 8:
            continue
        steal = a[cpu][7] - b[cpu][7]
        total = sum(a[cpu][:8]) - sum(b[cpu][:8])
        per_cpu[str(cpu)] = round(steal * 1000 / tick, 1)
        share[str(cpu)] = round(steal / total, 4) if total > 0 else 0.0
    if not per_cpu:
        return {"unavailable": "/proc/stat has no per-CPU steal column"}
    return {"ms": per_cpu, "share": share, "total_ms": round(sum(per_cpu.values()), 1),
            "max_share": max(share.values()), "resolution_ms": round(1000 / tick, 1)}


# An idle condition is "not idle" when others kept the measured CPUs busy for at least
# this share of their time over the measurement: 10 %, one CPU of ten, far above what a
# quiet machine's daemons take and far below one CPU hog beside a measurement of up to
# ten CPUs (docs/loads.md, "Is idle idle?").
NOT_IDLE_SHARE = 0.10
BUSY_COLUMNS = (0, 1, 2, 5, 6)      # user, nice, system, irq, softirq (/proc/stat; guest is in user)
NOT_BUSY_COLUMNS = (3, 4, 7)        # idle, iowait, steal


def others_load(before: Snapshot, after: Snapshot, cpus: list[int]) -> dict:
    """What processes other than this run's own ran on the measured CPUs during the job:
    {"cpus", "busy_s" (the CPUs' busy time), "own_s" (rtgauge's and the job's tool's CPU
    time), "others_s" (busy_s - own_s, at least 0), "capacity_s" (the CPUs' time),
    "share" (others_s / capacity_s), "threshold_share", "resolution_s", "busy_from",
    "idle"}; or {"unavailable": why}. Own time spent on other CPUs is subtracted too, so
    others_s is never more than what others ran.

    The busy time is the span's wall time on each CPU less its idle, iowait and steal
    time ("busy_from": "idle time"), not the sum of /proc/stat's user, system, irq and
    softirq columns: those are sampled at the clock tick, charged whole to whatever runs
    at the tick, while the idle time of a tickless kernel is measured, as own_s is. A job
    whose work is periodic and in step with the tick (the timer preemption at 250 µs:
    16 periods a 4 ms tick, its low thread busy at every tick) read about twice its busy
    time by the columns and was marked not idle with nothing else running. Snapshots
    without their clock reading (mono_s) fall back to the columns ("busy columns")."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    b, a = cpu_times(before.stat), cpu_times(after.stat)
    busy = total = not_busy = 0
    seen = []
    for cpu in cpus:
        if cpu not in a or cpu not in b or len(a[cpu]) < 8 or len(b[cpu]) < 8:
            continue
        seen.append(cpu)
        busy += sum(a[cpu][i] - b[cpu][i] for i in BUSY_COLUMNS)
        not_busy += sum(a[cpu][i] - b[cpu][i] for i in NOT_BUSY_COLUMNS)
        total += sum(a[cpu][:8]) - sum(b[cpu][:8])
    if not seen or total <= 0 or before.own_s is None or after.own_s is None:
        return {"unavailable": "/proc/stat gave no per-CPU times for the measured CPUs"}
    if before.mono_s is not None and after.mono_s is not None and after.mono_s > before.mono_s:
        capacity_s = (after.mono_s - before.mono_s) * len(seen)
        busy_s, busy_from = max(0.0, capacity_s - not_busy / tick), "idle time"
    else:
        busy_s, capacity_s, busy_from = busy / tick, total / tick, "busy columns"
    own_s = max(0.0, after.own_s - before.own_s)
    others_s = max(0.0, busy_s - own_s)
    share = others_s / capacity_s
    return {"cpus": seen, "busy_s": round(busy_s, 3), "own_s": round(own_s, 3), "others_s": round(others_s, 3),
            "capacity_s": round(capacity_s, 3), "share": round(share, 4), "threshold_share": NOT_IDLE_SHARE,
            "resolution_s": round(1 / tick, 3), "busy_from": busy_from, "idle": share < NOT_IDLE_SHARE}


def per_cpu_deltas(before: str, after: str, cpus: list[int]) -> dict[str, dict[str, int]]:
    """{cpu: {source: count during the job}} for the given CPUs, nonzero sources only."""
    cols = cpu_columns(after)
    b, a = parse_table(before), parse_table(after)
    out: dict[str, dict[str, int]] = {}
    for cpu in cpus:
        if cpu not in cols:
            continue
        i = cols.index(cpu)
        deltas = {}
        for source, counts in a.items():
            prev = b.get(source)
            d = counts[i] - (prev[i] if prev and i < len(prev) else 0)
            if d > 0:
                deltas[source] = d
        out[str(cpu)] = dict(sorted(deltas.items(), key=lambda kv: -kv[1]))
    return out


def context_switches(doc: dict) -> dict[str, dict]:
    out = {}
    for t in (doc.get("env") or {}).get("threads") or []:
        if "nvcsw" in t:
            out[str(t.get("index"))] = {"cpu": t.get("cpu"), "voluntary": t.get("nvcsw"),
                                        "involuntary": t.get("nivcsw")}
    return out


def counters(before: Snapshot, after: Snapshot, cpus: list[int], doc: dict) -> dict:
    irqs = per_cpu_deltas(before.interrupts, after.interrupts, cpus)
    result = {
        "cpus": cpus,
        "interrupts": irqs,
        "interrupts_total": {cpu: sum(v.values()) for cpu, v in irqs.items()},
        "softirqs": per_cpu_deltas(before.softirqs, after.softirqs, cpus),
        "context_switches": context_switches(doc),
        "steal": steal_between(before.stat, after.stat, cpus),
    }
    if before.smi is not None and after.smi is not None:
        result["smi"] = {str(c): after.smi[c] - before.smi[c] for c in cpus if c in after.smi}
    else:
        result["smi"] = after.smi_note
    return result
