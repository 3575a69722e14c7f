"""Why it spiked, over the whole run (docs/attribution.md).

Input: the kernel trace of the measured CPUs (tracefs text, clock "mono", so its
times are CLOCK_MONOTONIC like the engine's deadlines) and the engine's raw samples
(docs/samples.md). For every wake-up later than the threshold, the window from its
deadline D to its wake-up W = D + Ti on its CPU is cut into segments, each owned by
what held the CPU then:

- an interrupt context (innermost first): NMI, an IRQ handler (by name), an
  interrupt vector (local timer with the hrtimer function it ran, IPIs, a function-call
  IPI with the function it ran), a softirq;
- before the measuring thread was woken (its timer interrupt had not arrived):
  the task on the CPU; "exit from idle" when that was the idle task; a segment with
  no event longer than STALL_NS is "nothing traced (host stall)": no CPU sleeps, and
  no thread keeps its timer interrupt away, that long without a trace of it on
  bare metal, while a hypervisor that does not run the virtual CPU leaves exactly that;
- after it was woken: another thread (name, pid, priority) that kept the CPU, or the
  wake-up path (the switch into the measuring thread and its return to user space).

The spike's cause is the owner with the most time in the window. Causes are added up
per source over the run (spikes caused, total and worst time); the worst spike keeps
its timeline. Spike times give the rate (exceedances per hour with an exact Poisson
interval, mean time between spikes) and a periodicity test (Rayleigh scan over
periods, Bonferroni-corrected).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

STALL_NS = 500_000          # an untraced gap this long is a host stall (docs/attribution.md)
HANDLER_STALL = "host stall inside "   # a silent stretch of that length inside an interrupt handler
SHORT_HANDLERS = ("vector local timer", "vector reschedule IPI", "vector irq_work")   # their own work: µs
DEFAULT_QUANTILE = 0.999    # default threshold: the run's p99.9 of Ti
QUANTILE_RATE = (f"the threshold is the run's own p{DEFAULT_QUANTILE * 100:g}, so about one wake-up in "
                 f"{round(1 / (1 - DEFAULT_QUANTILE)):,} is above it whatever the machine: give a budget "
                 "(--budget-us) or --attribute-threshold-us for a rate")
MAX_SPIKES = 20_000         # spikes attributed one by one (the largest); all are counted
TIMELINE_BEFORE_NS = 50_000
WINDOW_BEFORE_NS = 10_000_000   # trace kept before a deadline: what held the CPU when it came
TIMELINE_MAX_LINES = 200
ENGINE_ROLE = "rtgauge's engine"   # rtgauge.trace.tasks: a thread of the measuring engine process
CMDLINE_CHARS = 60          # a thread's command line in its label, at most
MIN_PERIOD_S = 0.01         # shortest period the periodicity scan looks for
MAX_FREQUENCIES = 200_000

LINE = re.compile(r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<sec>\d+)\.(?P<frac>\d+):\s+"
                  r"(?P<ev>\w+):\s?(?P<rest>.*)$")
LOST = re.compile(r"CPU:(\d+) \[LOST (\d+) EVENTS\]")
FIELD = re.compile(r"(\w+)=(\S+)")
SWITCH = re.compile(r"prev_comm=(?P<pc>.*) prev_pid=(?P<pp>\d+) prev_prio=(?P<ppr>-?\d+) prev_state=\S+ ==> "
                    r"next_comm=(?P<nc>.*) next_pid=(?P<np>\d+) next_prio=(?P<npr>-?\d+)")
WAKEUP = re.compile(r"comm=(?P<c>.*) pid=(?P<p>\d+) prio=(?P<pr>-?\d+) target_cpu=(?P<t>\d+)")
SOFTIRQ = re.compile(r"vec=\d+ \[action=(\w+)\]")
IRQ = re.compile(r"irq=(\d+) name=(.*)")

# interrupt vector events (x86 irq_vectors) -> label
VECTORS = {"local_timer": "local timer", "reschedule": "reschedule IPI", "call_function": "function-call IPI",
           "call_function_single": "function-call IPI", "irq_work": "irq_work", "x86_platform_ipi": "platform IPI",
           "thermal_apic": "thermal interrupt", "error_apic": "APIC error", "spurious_apic": "spurious interrupt"}


@dataclass
class Event:
    ns: int
    cpu: int
    task: str
    pid: int
    name: str
    rest: str
    line: str
    starts_window: bool = False    # the first event kept after a stretch of trace that was skipped


def split_line(line: str):
    """A trace line -> (cpu, ns, rest after the timestamp) cheaply, or None."""
    b = line.find("[")
    e = line.find("]", b)
    if b < 0 or e < 0:
        return None
    parts = line[e + 1:].split(None, 2)
    if len(parts) < 3 or not parts[1].endswith(":"):
        return None
    sec, _, frac = parts[1][:-1].partition(".")
    try:
        return int(line[b + 1:e]), int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9]), parts[2]
    except ValueError:
        return None


class IrqCounter:
    """Interrupt handlers, softirqs and vectors on the measured CPUs: count, total and
    worst time, from entry/exit pairs, counted while the trace streams past."""

    def __init__(self):
        self.open: dict[tuple[int, str], int] = {}
        self.acc: dict[str, list] = {}
        self.names: dict[str, str] = {}

    def see(self, cpu: int, ns: int, name: str, rest: str) -> None:
        if name.startswith("irq_handler_"):
            key = "irq " + rest.split(None, 1)[0][4:] if rest.startswith("irq=") else None
        elif name.startswith("softirq_"):
            m = SOFTIRQ.search(rest)
            key = f"softirq {m.group(1)}" if m else None
        else:
            base = name.rsplit("_", 1)[0]
            key = f"vector {VECTORS[base]}" if base in VECTORS else None
        if key is None:
            return
        if name.endswith("_entry"):
            self.open[(cpu, key)] = ns
            if name == "irq_handler_entry":
                m = IRQ.match(rest)
                self.names[key] = f"irq {m.group(1)} {m.group(2)}" if m else key
        elif (cpu, key) in self.open:
            d = ns - self.open.pop((cpu, key))
            a = self.acc.setdefault(key, [0, 0, 0])
            a[0] += 1
            a[1] += d
            a[2] = max(a[2], d)

    def rows(self) -> list[dict]:
        rows = [{"source": self.names.get(k, k), "count": v[0], "total_us": round(v[1] / 1000, 1),
                 "worst_us": round(v[2] / 1000, 1)} for k, v in self.acc.items()]
        # by the time they took from the measured CPUs: a few long handlers (an IPI storm)
        # delay a wake-up more than many short ones (the tick), and must not fall off the list
        return sorted(rows, key=lambda r: (-r["total_us"], -r["count"], r["source"]))[:10]


def scan_trace(lines, windows: dict[int, list[tuple[int, int]]] | None = None, irqs: IrqCounter | None = None,
               irq_cpus: set[int] | None = None) -> tuple[dict[int, list[Event]], dict[int, int]]:
    """Trace text -> ({cpu: events in time order}, {cpu: events lost}), in one pass.
    With windows ({cpu: sorted, disjoint [lo, hi] in ns}), only the events inside them
    are kept (a long run's trace does not fit in memory; the spikes' windows do); irqs
    counts the interrupts of irq_cpus on the way."""
    per_cpu: dict[int, list[Event]] = {}
    lost: dict[int, int] = {}
    ptr: dict[int, int] = {}
    kept_in: dict[int, int] = {}       # per CPU, the window of the last event kept
    for line in lines:
        if not line or line[0] == "#":
            continue
        head = split_line(line)
        if head is None:
            lm = LOST.search(line)
            if lm:
                lost[int(lm.group(1))] = lost.get(int(lm.group(1)), 0) + int(lm.group(2))
            continue
        cpu, ns, after = head
        name, _, rest = after.partition(": ")
        if name.endswith(":"):       # an event with no fields
            name, rest = name[:-1], ""
        if irqs is not None and (irq_cpus is None or cpu in irq_cpus) and (
                name.endswith("_entry") or name.endswith("_exit")):
            irqs.see(cpu, ns, name, rest)
        if windows is not None:
            ws = windows.get(cpu)
            if not ws:
                continue
            i = ptr.get(cpu, 0)
            while i < len(ws) and ws[i][1] < ns:
                i += 1
            ptr[cpu] = i
            if i == len(ws) or ns < ws[i][0]:
                continue
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        starts = windows is not None and kept_in.get(cpu) != ptr[cpu]
        if windows is not None:
            kept_in[cpu] = ptr[cpu]
        per_cpu.setdefault(cpu, []).append(Event(ns, cpu, m.group("task").strip(), int(m.group("pid")), name,
                                                 rest.rstrip("\n"), line.rstrip("\n"), starts))
    for evs in per_cpu.values():
        evs.sort(key=lambda e: e.ns)   # each CPU's own order; the stable sort keeps ties as written
    return per_cpu, lost


def parse_trace(lines) -> tuple[dict[int, list[Event]], dict[int, int]]:
    """Every event of a (short) trace: ({cpu: events in time order}, {cpu: events lost})."""
    return scan_trace(lines)


def thread_label(comm: str, pid: int, prio: int | None, tasks: dict | None = None) -> str:
    """'thread NAME (pid N, POLICY)', and where the run saw the task in /proc
    (rtgauge.trace.tasks): whose it is (rtgauge's engine, trace reader or load helper)
    and its command line (a kernel thread has none), so a `python3` or a `sh` is named."""
    if prio is None:
        text = f"thread {comm} (pid {pid})"
    else:
        # the kernel's prio: 0..98 is SCHED_FIFO/RR priority 99..1, 120 is nice 0
        policy = f"FIFO/RR {99 - prio}" if prio < 99 else f"nice {prio - 120}" if prio >= 100 else f"prio {prio}"
        text = f"thread {comm} (pid {pid}, {policy})"
    seen = (tasks or {}).get(pid)
    if not seen:
        return text
    said = []
    if seen.get("own"):
        said.append(seen["own"])
    cmd = seen.get("cmdline")
    if cmd is None:
        said.append("kernel thread")
    elif cmd and cmd != comm:
        said.append(short_cmdline(cmd))
    return text + (f" [{': '.join(said)}]" if said else "")


def short_cmdline(cmd: str) -> str:
    """A command line in at most CMDLINE_CHARS: whole if it fits; else each path word
    as its last part (the script a `python3` runs is what names it, not where it was
    checked out), then cut at the end."""
    if len(cmd) <= CMDLINE_CHARS:
        return cmd
    cmd = " ".join(w.rsplit("/", 1)[-1] if "/" in w.rstrip("/") else w for w in cmd.split(" "))
    return cmd if len(cmd) <= CMDLINE_CHARS else cmd[:CMDLINE_CHARS - 1] + "…"


@dataclass
class Spike:
    cpu: int
    thread: int
    cycle: int
    deadline_ns: int
    latency_ns: int
    parts: dict[str, int] = field(default_factory=dict)

    @property
    def wakeup_ns(self) -> int:
        return self.deadline_ns + self.latency_ns

    def cause(self) -> str:
        if not self.parts:
            return "nothing traced (host stall)"
        return max(self.parts.items(), key=lambda kv: kv[1])[0]


def kind_of(label: str) -> str:
    for prefix, kind in ((HANDLER_STALL, "host stall"), ("irq ", "IRQ handler"), ("softirq ", "softirq"), ("nmi", "NMI"), ("vector ", "interrupt"),
                         ("thread ", "thread"), ("exit from idle", "idle"), ("nothing traced", "host stall"),
                         ("wake-up path", "wake-up path")):
        if label.startswith(prefix):
            return kind
    return "other"


class CpuSweep:
    """Walks one CPU's events in time order, keeping what held the CPU, and hands the
    time between consecutive events to the spike windows it falls in."""

    def __init__(self, measuring: set[str], tasks: dict | None = None, virtual: bool = False,
                 stalls: list[tuple[int, int]] | None = None):
        self.measuring = measuring
        self.tasks = tasks            # pid -> {"cmdline", "own"} seen in /proc during the run
        self.virtual = virtual        # a virtual machine: its host may stop the vCPU at any time
        self.stalls = stalls or []    # [lo, hi] ns of the host stalls the engine's observer detected
        self.stack: list[str] = []       # interrupt contexts, innermost last
        self.prio: dict[int, int] = {}
        self.task: tuple[str, int] | None = None
        self.woken_at: int | None = None   # last wake-up of a measuring thread on this CPU
        # the measuring threads by thread id where the run saw them in /proc (the engine's own):
        # another process of the same name (a second rtgauge's engine) is then a thread, not ours
        ids = {tid for tid, t in (tasks or {}).items() if t.get("own") == ENGINE_ROLE}
        self.measuring_ids = ids or None

    def is_measuring(self, comm: str, pid: int) -> bool:
        return comm in self.measuring and (self.measuring_ids is None or pid in self.measuring_ids)

    def owner(self, start: int, end: int, deadline: int) -> str:
        if self.stack:
            if end - start >= STALL_NS and self.host_stalled(self.stack[-1], start, end):
                # a handler silent for 500 µs or more: the host did not run the vCPU inside it
                return f"{HANDLER_STALL}{self.stack[-1]}"
            return self.stack[-1]
        comm, pid = self.task if self.task else ("?", -1)
        woken = self.woken_at is not None and self.woken_at >= deadline
        if not woken:
            if end - max(start, deadline) >= STALL_NS:   # silence after the deadline, not the sleep before it
                return "nothing traced (host stall)"
            if pid == 0:
                return "exit from idle"
            if self.is_measuring(comm, pid):
                return "wake-up path"
            return thread_label(comm, pid, self.prio.get(pid), self.tasks)
        if pid == 0 or self.is_measuring(comm, pid):
            return "wake-up path"
        return thread_label(comm, pid, self.prio.get(pid), self.tasks)

    def host_stalled(self, context: str, start: int, end: int) -> bool:
        """A silence of STALL_NS inside an interrupt context is the host's when it overlaps
        a stall the engine's observer detected, or, on a virtual machine, inside a handler
        whose own work is a few µs (a "3 ms local timer"); a function-call IPI, an IRQ
        handler or a softirq can run that long (perf's remote_function in the IPI storm
        holds the CPU up to about 3 ms), so there only the observer's stall counts."""
        if any(lo < end and hi > start for lo, hi in self.stalls):
            return True
        return self.virtual and context.startswith(SHORT_HANDLERS)

    def step(self, ev: Event) -> None:
        self.task = (ev.task, ev.pid)
        n = ev.name
        if n == "sched_switch":
            m = SWITCH.match(ev.rest)
            if m:
                self.prio[int(m.group("pp"))] = int(m.group("ppr"))
                self.prio[int(m.group("np"))] = int(m.group("npr"))
                self.task = (m.group("nc"), int(m.group("np")))
        elif n == "sched_wakeup":
            m = WAKEUP.match(ev.rest)
            if m and self.is_measuring(m.group("c"), int(m.group("p"))) and int(m.group("t")) == ev.cpu:
                self.woken_at = ev.ns
            if m:
                self.prio[int(m.group("p"))] = int(m.group("pr"))
        elif n == "irq_handler_entry":
            m = IRQ.match(ev.rest)
            self.stack.append(f"irq {m.group(2) if m else '?'}")
        elif n == "softirq_entry":
            m = SOFTIRQ.search(ev.rest)
            self.stack.append(f"softirq {m.group(1) if m else '?'}")
        elif n == "nmi_handler":
            pass   # one event after the handler ran: its delta_ns is handled in attribute()
        elif n == "hrtimer_expire_entry":
            fn = dict(FIELD.findall(ev.rest)).get("function", "?")
            if self.stack and self.stack[-1].startswith("vector local timer"):
                self.stack.append(f"vector local timer: {fn}")
        elif n == "csd_function_entry":
            # the function a function-call IPI runs (csd events, Linux 6.3+), like the timer's hrtimer function
            fn = dict(FIELD.findall(ev.rest)).get("func", "?").rstrip(",")
            if self.stack and self.stack[-1] == "vector function-call IPI":
                self.stack.append(f"vector function-call IPI: {fn}")
        elif n.endswith("_entry") and n[:-6] in VECTORS:
            self.stack.append(f"vector {VECTORS[n[:-6]]}")
        elif n in ("irq_handler_exit", "softirq_exit", "hrtimer_expire_exit", "csd_function_exit") or (
                n.endswith("_exit") and n[:-5] in VECTORS):
            self._pop(n)

    def _pop(self, n: str) -> None:
        """Pops the context an exit closes, with what it left open inside it."""
        vector = n.endswith("_exit") and n[:-5] in VECTORS
        want = f"vector {VECTORS[n[:-5]]}" if vector else {
            "irq_handler_exit": "irq ", "softirq_exit": "softirq ", "hrtimer_expire_exit": "vector local timer: ",
            "csd_function_exit": "vector function-call IPI: "}[n]
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] == want if vector else self.stack[i].startswith(want):
                del self.stack[i:]
                return
        # an exit whose entry was before the trace began: nothing to pop


def attribute_cpu(events: list[Event], spikes: list[Spike], measuring: set[str], tasks: dict | None = None,
                  virtual: bool = False, stalls: list[tuple[int, int]] | None = None) -> None:
    """Fill each spike's parts (owner -> ns within [deadline, wake-up]) from one CPU's events."""
    spikes = sorted(spikes, key=lambda s: s.deadline_ns)
    if not spikes or not events:
        for s in spikes:
            s.parts = {"nothing traced (host stall)": s.latency_ns} if events else {}
        return
    sweep = CpuSweep(measuring, tasks, virtual, stalls)
    si = 0
    active: list[Spike] = []
    prev = events[0].ns

    def give(a: int, b: int) -> None:
        for s in active:
            lo, hi = max(a, s.deadline_ns), min(b, s.wakeup_ns)
            if hi > lo:
                label = sweep.owner(a, b, s.deadline_ns)
                s.parts[label] = s.parts.get(label, 0) + hi - lo

    for ev in events:
        while si < len(spikes) and spikes[si].deadline_ns <= ev.ns:
            active.append(spikes[si])
            si += 1
        if ev.starts_window:     # the trace before it was skipped: an exit there was not seen
            sweep.stack.clear()
        # the task column is the task that was current up to this event: a switch is itself an event
        sweep.task = (ev.task, ev.pid)
        give(prev, ev.ns)
        if ev.name == "nmi_handler":
            d = dict(FIELD.findall(ev.rest)).get("delta_ns")
            if d and d.isdigit():
                for s in active:
                    lo, hi = max(ev.ns - int(d), s.deadline_ns), min(ev.ns, s.wakeup_ns)
                    if hi > lo:
                        s.parts["nmi"] = s.parts.get("nmi", 0) + hi - lo
        sweep.step(ev)
        prev = ev.ns
        active = [s for s in active if s.wakeup_ns > ev.ns]
    while si < len(spikes):          # windows after the last event: nothing was traced
        active.append(spikes[si])
        si += 1
    for s in active:
        lo = max(prev, s.deadline_ns)
        if s.wakeup_ns > lo:
            s.parts["nothing traced (host stall)"] = s.parts.get("nothing traced (host stall)", 0) + s.wakeup_ns - lo
    for s in spikes:
        if not s.parts:
            s.parts = {"nothing traced (host stall)": s.latency_ns}


def last_interrupt_before(events: list[Event], spike: Spike) -> str:
    """The naive reading of a trace tail, kept to show it fails (tests): blame the last
    interrupt that began before the wake-up."""
    best = "nothing traced (host stall)"
    for ev in events:
        if ev.ns > spike.wakeup_ns:
            break
        if ev.name == "irq_handler_entry":
            m = IRQ.match(ev.rest)
            best = f"irq {m.group(2) if m else '?'}"
        elif ev.name == "softirq_entry":
            m = SOFTIRQ.search(ev.rest)
            best = f"softirq {m.group(1) if m else '?'}"
        elif ev.name.endswith("_entry") and ev.name[:-6] in VECTORS:
            best = f"vector {VECTORS[ev.name[:-6]]}"
    return best


def timeline(events: list[Event], spike: Spike) -> list[dict]:
    """The worst spike's events on its CPU, from 50 µs before its deadline to its wake-up."""
    out = []
    for ev in events:
        if ev.ns < spike.deadline_ns - TIMELINE_BEFORE_NS:
            continue
        if ev.ns > spike.wakeup_ns + 20_000 or len(out) >= TIMELINE_MAX_LINES:
            break
        out.append({"t_us": round((ev.ns - spike.deadline_ns) / 1000, 1), "task": f"{ev.task}-{ev.pid}",
                    "event": ev.name, "detail": ev.rest[:160]})
    return out


def poisson_rate(n: int, hours: float, level: float = 0.95) -> dict:
    """Exceedances per hour with the exact (Garwood) Poisson interval."""
    a = 1 - level
    lo = 0.0 if n == 0 else stats.chi2.ppf(a / 2, 2 * n) / 2
    hi = stats.chi2.ppf(1 - a / 2, 2 * n + 2) / 2
    return {"per_hour": n / hours if hours > 0 else None, "low": lo / hours if hours > 0 else None,
            "high": hi / hours if hours > 0 else None, "level": level}


def periodicity(times_s: list[float], duration_s: float) -> dict:
    """Are the spikes periodic? A Rayleigh scan: for each trial period P the phases
    t mod P of the n spike times give Z = 2|sum exp(2 pi i t/P)|^2 / n, chi-square with 2
    degrees of freedom when the times are not locked to P. The scan covers periods from
    MIN_PERIOD_S to half the run; the p-value is Bonferroni-corrected for the number of
    independent periods scanned. Periodic when p < 0.01 with at least 5 spikes."""
    n = len(times_s)
    if n < 5 or duration_s <= 0:
        return {"tested": False, "why": "fewer than 5 spikes" if n < 5 else "no duration"}
    t = np.asarray(times_s, dtype=float) - times_s[0]
    fmin, fmax = 2.0 / duration_s, 1.0 / MIN_PERIOD_S
    independent = max(1.0, (fmax - fmin) * duration_s)
    if independent * 3 > MAX_FREQUENCIES:
        fmax = fmin + MAX_FREQUENCIES / 3 / duration_s
        independent = max(1.0, (fmax - fmin) * duration_s)
    freqs = np.linspace(fmin, fmax, int(independent * 3) + 1)
    best_z, best_f = 0.0, None
    for i in range(0, len(freqs), 4096):
        f = freqs[i:i + 4096]
        ph = 2 * np.pi * np.outer(f, t)
        z = 2.0 * (np.cos(ph).sum(axis=1) ** 2 + np.sin(ph).sum(axis=1) ** 2) / n
        k = int(np.argmax(z))
        if z[k] > best_z:
            best_z, best_f = float(z[k]), float(f[k])
    p_one = math.exp(-best_z / 2)
    p = min(1.0, -math.expm1(independent * math.log1p(-p_one))) if p_one < 1 else 1.0
    gaps = np.diff(t)
    return {"tested": True, "periodic": p < 0.01, "p_value": p, "period_s": 1 / best_f if best_f else None,
            "periods_scanned": int(independent), "shortest_period_s": 1 / fmax,
            "gap_cv": float(gaps.std() / gaps.mean()) if len(gaps) and gaps.mean() > 0 else None}



def windows_of(by_cpu: dict[int, list[Spike]]) -> dict[int, list[tuple[int, int]]]:
    """Per CPU the stretches of trace the spikes need: from WINDOW_BEFORE_NS before each
    deadline (to know what held the CPU when it came) to just after the wake-up; merged."""
    out = {}
    for cpu, group in by_cpu.items():
        spans = sorted((s.deadline_ns - WINDOW_BEFORE_NS, s.wakeup_ns + 20_000) for s in group)
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out[cpu] = [(lo, hi) for lo, hi in merged]
    return out


def attribute(trace_lines, samples: tuple, thread_cpus: dict[int, int], measuring: set[str],
              threshold_us: float | None = None, cpus: list[int] | None = None, *, threshold_from: str | None = None,
              tasks: dict | None = None, virtual: bool = False, stalls: list | None = None) -> dict:
    """The whole-run attribution stored under env.attribution (docs/attribution.md).
    threshold_from says where a given threshold came from ("user", "budget"); tasks
    (rtgauge.trace.tasks) name the threads; virtual and stalls (the engine's
    env.stalls intervals, CLOCK_MONOTONIC like the trace) tell a host stall inside an
    interrupt handler."""
    th, cy, dl, ti = samples
    if len(ti) == 0:
        return {"unavailable": "the engine wrote no samples"}
    quantile = threshold_us is None
    chosen = (threshold_from or "user") if not quantile else f"p{DEFAULT_QUANTILE * 100:g} of the run"
    if quantile:
        threshold_us = float(np.quantile(ti, DEFAULT_QUANTILE)) / 1000
    over = np.nonzero(ti > threshold_us * 1000)[0]
    order = over[np.argsort(-ti[over], kind="stable")][:MAX_SPIKES]
    spikes = [Spike(thread_cpus.get(int(th[i]), -1), int(th[i]), int(cy[i]), int(dl[i]), int(ti[i])) for i in order]
    by_cpu: dict[int, list[Spike]] = {}
    for s in spikes:
        by_cpu.setdefault(s.cpu, []).append(s)
    irqs = IrqCounter()
    per_cpu, lost = scan_trace(trace_lines, windows_of(by_cpu), irqs, set(cpus) if cpus is not None else None)
    spans = [(x[0], x[1]) for x in (stalls or [])
             if isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(v, int) for v in x)]
    for cpu, group in by_cpu.items():
        attribute_cpu(per_cpu.get(cpu, []), group, measuring, tasks, virtual, spans)
    sources: dict[str, dict] = {}
    for s in spikes:
        cause = s.cause()
        for label, ns in s.parts.items():
            row = sources.setdefault(label, {"source": label, "kind": kind_of(label), "caused": 0, "seen_in": 0,
                                             "total_us": 0.0, "worst_us": 0.0})
            row["seen_in"] += 1
            row["total_us"] += ns / 1000
            row["worst_us"] = max(row["worst_us"], ns / 1000)
            if label == cause:
                row["caused"] += 1
    for row in sources.values():
        row["total_us"] = round(row["total_us"], 1)
        row["worst_us"] = round(row["worst_us"], 1)
    first = int(dl.min())
    last = int((dl + ti).max())
    duration_s = max((last - first) / 1e9, 1e-9)
    times = sorted(float(dl[i] + ti[i] - first) / 1e9 for i in over)
    worst = spikes[0] if spikes else None
    return {
        "threshold_us": round(threshold_us, 3), "threshold_from": chosen, "samples": int(len(ti)),
        "spikes": int(len(over)), "attributed": len(spikes), "duration_s": round(duration_s, 3),
        "stall_bound_us": STALL_NS / 1000,
        # a rate above the run's own quantile is n/1000 of the cycles by construction: no figure of the machine
        "rate": {"per_hour": None, "why": QUANTILE_RATE} if quantile else
                {**poisson_rate(len(over), duration_s / 3600),
                 "mean_time_between_s": duration_s / len(over) if len(over) else None},
        "periodicity": periodicity(times, duration_s),
        "sources": sorted(sources.values(), key=lambda r: (-r["caused"], -r["total_us"], r["source"])),
        "spike_list": [{"cpu": s.cpu, "thread": s.thread, "cycle": s.cycle, "latency_us": round(s.latency_ns / 1000, 1),
                        "t_s": round((s.deadline_ns - first) / 1e9, 6), "deadline_ns": s.deadline_ns,
                        "cause": s.cause(),
                        "parts_us": {k: round(v / 1000, 1) for k, v in sorted(s.parts.items(), key=lambda kv: -kv[1])}}
                       for s in spikes[:100]],
        "worst": None if worst is None else {
            "cpu": worst.cpu, "cycle": worst.cycle, "latency_us": round(worst.latency_ns / 1000, 1),
            "cause": worst.cause(), "timeline": timeline(per_cpu.get(worst.cpu, []), worst)},
        "irq_sources": irqs.rows(),
        "events_kept": sum(len(v) for v in per_cpu.values()),
        "lost_events": sum(lost.values()),
    }
