"""The published evaluations beside the measured runs, each published row beside the
measurement whose METHOD matches (docs/method.md, "The published evaluations").

Every published test names what it measured (`Method`): the engine test, metric and
options that measure the same thing (`match`, tried in order), and measurements of
a related but different thing (`near`) with the sentence saying how they differ. A
row gets, per run:

- "compared": the matching measurement of the same condition (published idle ->
  idle, the cyclictest study's cpu-stressed -> cpu, the interrupt study's loaded ->
  ping-tcp, the flood ping + TCP stream it used; never a stress-ng CPU load);
- "different method: ...": only a `near` measurement exists; it is named, not
  compared;
- "not measured".

`studies(runs)` gives one table per study (one column per published system, one per
run); `published_verdicts(runs)` the behaviour verdicts beside the published ones;
`overlay_curves(runs)` the wake-up latency histograms of several runs per condition."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtgauge.analysis.pwcet import worst_case
from rtgauge.records import Measurement, Metric, Run
from rtgauge.published import Published, load_published

# (engine test, metric, options that must match[, tool]): the tool is "engine" unless a
# fourth element names another (the cyclictest study's figures are cyclictest's own)
Target = tuple


@dataclass(frozen=True)
class Method:
    group: str                     # rows are grouped by this in the tables
    what: str                      # what the published figure measured
    ours: str                      # what the matching measurement times
    match: tuple[Target, ...] = ()
    near: tuple[tuple[str, str, dict, str], ...] = ()   # (test, metric, params, "different method: ...")
    unmatched: str = ""            # why nothing of ours matches, when nothing does
    # analogues set beside the row (never compared): (test, metric, params, "analogue: ...")
    beside: tuple[tuple[str, str, dict, str], ...] = ()


IRQ_NEAR = (("latency", "ti", {}, "different method: timer-to-thread wake-up, not interrupt latency "
             "(run the latency test with --split for ti_irq)"),)
LATENCY = Method("wake-up latency", "timer expiry to the measuring thread running (the Xenomai latency tool)",
                 "latency ti: deadline to the thread running", (("latency", "ti", {}),))
# the cyclictest study's cyclictest rows sit beside the cyclictest run the profile makes
# (the same tool, its own clock reads and its own histogram); the engine's latency is
# the fallback where no cyclictest ran
CYCLICTEST = Method("wake-up latency", "timer expiry to the measuring thread running (cyclictest)",
                    "cyclictest on the same settings; rtgauge's latency ti where cyclictest did not run",
                    (("latency", "ti", {}, "cyclictest"), ("latency", "ti", {})))
IRQ = Method("interrupt latency", "timer expiry to its interrupt handler",
             "latency --split ti_irq: deadline to the timer interrupt handling the thread's timer",
             (("latency", "ti_irq", {}),), IRQ_NEAR)
CONTEXT = Method("interrupt to top-priority task",
                 "from the interrupt handler releasing a semaphore to the top-priority task running",
                 "latency --split ti_sched: from the timer interrupt handling the thread's timer to the thread "
                 "running (the wake-up's scheduling part)",
                 (("latency", "ti_sched", {}),),
                 (("preempt", "preempt", {"event": "timer"},
                   "different method: timed from the timer's deadline, so it includes the interrupt latency "
                   "(run the latency test with --split for ti_sched)"),
                  ("preempt", "preempt", {"event": "sem"},
                   "different method: the semaphore is posted by a running thread, no interrupt in the path"),
                  ("switch", "switch", {"threads": 2},
                   "different method: equal-priority threads yielding, nothing posted")))
# The Xenomai latency tool's kernel-mode and timer-IRQ rows sit beside rtla timerlat (the
# cyclictest study's profiles request it where the kernel has the timerlat tracer): its
# kernel thread and its timer's IRQ, each stored under its own name (rtgauge/tools/rtla.py)
KERNEL_MODE = Method(
    "kernel-mode wake-up latency", "timer expiry to a kernel-space task running (the Xenomai latency tool, "
    "kernel mode)", "rtla timerlat timerlat_thread: the timer's expiry to timerlat's own kernel thread running",
    (("latency", "timerlat_thread", {}, "rtla"),),
    (("latency", "ti", {}, "different method: a user-space thread (latency ti); the kernel-mode row sits beside "
      "rtla timerlat's kernel thread, which needs rtla and a kernel with the timerlat tracer"),))
TIMER_IRQ = Method(
    "timer interrupt latency", "timer expiry to its interrupt handler (the Xenomai latency tool, timer-IRQ mode)",
    "rtla timerlat timerlat_irq: the timer's expiry to its interrupt handler, as the kernel's tracer reads it; "
    "else latency --split ti_irq", (("latency", "timerlat_irq", {}, "rtla"), ("latency", "ti_irq", {})), IRQ_NEAR)
PREEMPT = Method("preemption", "a timer makes a higher-priority task ready; it preempts the running one",
                 "preempt --event timer", (("preempt", "preempt", {"event": "timer"}),),
                 (("preempt", "preempt", {"event": "sem"},
                   "different method: woken by a semaphore posted by the running thread, no timer in the path"),))
TICK = Method("clock tick", "the CPU time each clock tick takes from a running thread",
              "tick tick_gap: gaps of the clock-reading loop that recur at the tick period",
              (("tick", "tick_gap", {}),),
              (("tick", "gap", {}, "different method: every gap of the clock loop, host stalls and other "
                "interrupts included (an engine without tick_gap)"),))


def evaluation(group: str, test: str, metric: str, params: dict | None = None, what: str = "") -> Method:
    return Method(group, what or group, f"{test} {metric}", ((test, metric, params or {}),))


METHODS: dict[str, Method] = {
    # the tire study's Rhealstone table (worst case, ns)
    "task_switch": Method("task switch", "equal-priority tasks yielding to each other", "switch, 2 threads",
                          (("switch", "switch", {"threads": 2}),)),
    "preemption": PREEMPT,
    # the IPC primitive per system as published (the tire study's section 3.3): sem_t for
    # Linux and RT-Preempt; the Xenomai port used a pthread mutex instead (RTAI: its LXRT API)
    "ipc_semaphore": Method("semaphore shuffle", "a semaphore handed back and forth (sem_t; the Xenomai row: "
                            "a pthread mutex)", "shuffle --primitive sem",
                            (("shuffle", "shuffle", {"primitive": "sem"}),),
                            beside=(("shuffle", "shuffle", {"primitive": "mutex"},
                                     "the primitive of the Xenomai row: its port used a pthread mutex in place "
                                     "of sem_t; the Linux and RT-Preempt rows used sem_t"),)),
    # the interrupt study
    "interrupt_latency": IRQ,
    "context_switch": CONTEXT,
    # the cyclictest study
    "cyclictest": CYCLICTEST,
    "xenomai_latency_user": LATENCY,
    "xenomai_latency_kernel": KERNEL_MODE,
    "xenomai_latency_timer_irq": TIMER_IRQ,
    # the independent evaluation
    "CLK-P-DUR clock tick duration": TICK,
    # the suite's Table 18 heads these figures "interrupt dispatch latency": the irq-gap
    # analogue of IRQ_P_DLT (handler exit -> the interrupted thread running) sits beside it
    "IRQ-P-LAT interrupt latency": Method(
        IRQ.group, IRQ.what, IRQ.ours, IRQ.match, IRQ.near,
        beside=(("irq-gap", "dispatch", {}, "analogue of IRQ_P_DLT: from the last interrupt handler's exit "
                 "to the interrupted spinning thread running again (irq-gap, trace events); the suite's "
                 "interrupts came from a PCI card, these from the machine's own sources"),)),
    "IRQ-S-SUS min period without loss": Method(
        "sustained interrupt rate", "shortest period of hardware interrupts without a loss",
        "timer-sustain shortest_period: the shortest period of a POSIX timer served by one thread "
        "with no expiration lost",
        unmatched="different method: a hardware interrupt source; rtgauge's counterpart is hil-sustained "
        "(UDP frames), shown in the HIL section",
        beside=(("timer-sustain", "shortest_period", {}, "analogue of IRQ_S_SUS: a POSIX timer's expirations "
                 "served by one real-time thread, an overrun counted as lost, the period swept downward; "
                 "thousands of expirations a probe, not the suite's 10^9 hardware interrupts"),)),
    # no figures of these two survive in the suite's text: the mapping names the analogue
    "IRQ-P-DLT interrupt dispatch latency": Method(
        "interrupt dispatch", "from the interrupt handler back to the interrupted thread",
        "irq-gap dispatch: the last handler's exit in a gap to the spinning thread's next clock reading",
        (("irq-gap", "dispatch", {}),)),
    "IRQ-P-TLT interrupt to thread latency": Method(
        "interrupt to thread", "from the interrupt handler to the thread it releases running",
        "latency --split ti_sched: from the timer interrupt handling the thread's timer to the thread running",
        (("latency", "ti_sched", {}),)),
}
for n in (2, 10, 128, 1000):
    METHODS[f"THR-P-SLS switch {n} threads"] = evaluation("thread switch", "switch", "switch", {"threads": n},
                                                          f"yield ring of {n} equal-priority FIFO threads")
for scen, key in (("never-run", "never_run"), ("run-and-terminate", "run_terminate"), ("run-and-block", "run_block")):
    for op in ("create", "delete"):
        METHODS[f"THR-P-NEW {op} {scen}"] = evaluation("thread create/delete", "thread", f"{op}_{key}")
for used, key in (("used", "used"), ("never-used", "unused")):
    for op in ("create", "delete"):
        METHODS[f"SEM-P-NEW {op} {used}"] = evaluation("semaphore create/delete", "sem", f"{op}_{key}")
for op in ("acquire", "release"):
    METHODS[f"SEM-P-ARN {op}"] = evaluation("semaphore", "sem", op)
    METHODS[f"SEM-P-ARC {op} 128 waiters"] = evaluation("semaphore", "sem", f"{op}_contended")
    METHODS[f"MUT-P-ARN {op}"] = evaluation("mutex", "mutex", op)
    METHODS[f"MUT-P-ARC {op}"] = evaluation("mutex", "mutex", f"{op}_contended")

# A published condition -> the load condition of ours that reproduces it, per study
# (None: every study). The interrupt study's load was a flood ping and a TCP stream
# copied to a serial line: ping-tcp, never a CPU stressor.
CONDITIONS: dict[tuple[str | None, str], str] = {
    (None, "idle"): "idle",
    (None, "cpu-stressed"): "cpu",
    ("rtlinux-rtems-2000", "loaded"): "ping-tcp",
}


def our_condition(p: Published) -> str | None:
    return CONDITIONS.get((p.source, p.condition), CONDITIONS.get((None, p.condition)))


@dataclass(frozen=True)
class Study:
    source: str
    title: str
    stats: tuple[str, ...]        # the statistics the study gives, in its order
    layout: str                   # how a cell reads: "min/avg/max", "max (avg±σ)", "avg/max", "max"
    samples: int | None = None    # samples per CPU behind each published maximum, where the study states it
    samples_source: str = ""      # where it says so
    # the settings of its periodic (wake-up latency) measurements: the period (µs), the
    # policy and the priority; the study's where it states them, else its profile's
    # (rtgauge/profiles/), which redoes it. A measurement at other settings is shown
    # beside the row but not comparable.
    interval_us: int | None = None
    policy: str | None = "fifo"
    priority: int | None = None


# A maximum grows with the number of samples it is the largest of: a measured maximum
# sits beside a published one as comparable only when it rests on at least this share
# of the published sample count (docs/studies.md, "Comparable maxima").
COMPARABLE_SHARE = 0.5

STUDIES = (
    Study("xenomai3-arm-2016", "The cyclictest study (mainline, PREEMPT_RT, Xenomai 2 and 3)",
          ("min", "avg", "max"), "min / avg / max", 1_000_000,
          "about 1,000,000 samples a run on one CPU (section 2.1.3)", interval_us=1000, priority=99),
    Study("rtlinux-rtems-2000", "The interrupt-latency / context-switch study (RTLinux, RTEMS, VxWorks)",
          ("max", "avg", "stddev"), "max (avg ± σ)", 2_000_000, "2,000,000 timer interrupts at 4 kHz (section 3.2)",
          interval_us=250, priority=99),
    Study("qnx65-vs-linux-rt-2012", "The independent RTOS evaluation (QNX Neutrino 6.5, Linux-rt)",
          ("avg", "max"), "avg / max", interval_us=1000, priority=99),
    Study("rtos-vs-gpos-tire-2015", "The tire-model study's microbenchmarks (RTAI, Xenomai, PREEMPT_RT, Linux)",
          ("max",), "max"),
)


def samples_per_cpu(m: Measurement, metric: str = "ti") -> int:
    """The samples behind one CPU's maximum: the smallest of the per-CPU counts
    (METRIC#CPU), else the pooled count over the CPUs measured. A maximum pooled over N
    CPUs is the largest of N maxima, each of its CPU's samples."""
    per = [d.count for k, d in m.metrics.items()
           if k.startswith(metric + "#") and k[len(metric) + 1:].isdigit() and d.count]
    if per:
        return min(per)
    count = m.metric(metric).count or 0
    cpus = m.env.get("cpus") if isinstance(m.env.get("cpus"), list) else m.params.get("cpus")
    n = len(cpus) if isinstance(cpus, list) and cpus else 1
    return count // n


def settings_mismatch(m: Measurement, study: Study) -> list[str]:
    """How a measurement's settings differ from the study's: the period (wake-up
    latency tests), the policy and the priority it ran with (env: what it obtained;
    else what it asked for). Empty: the same settings."""
    out = []
    periodic = m.test == "latency"
    if periodic and study.interval_us:
        got = m.period_us
        if got is None:
            out.append(f"period not recorded (the study's {study.interval_us:g} µs)")
        elif abs(got - study.interval_us) > 1e-6 * study.interval_us:
            out.append(f"period {got:g} µs ({1e6 / got:,.0f} Hz) beside the study's {study.interval_us:g} µs "
                       f"({1e6 / study.interval_us:,.0f} Hz)")
    policy = m.env.get("policy") or m.params.get("policy")
    if study.policy and policy and str(policy) != study.policy:
        out.append(f"policy {policy} beside the study's {study.policy}")
    if periodic and study.priority is not None:
        prio = m.env.get("priority", m.params.get("priority"))
        if isinstance(prio, int) and not isinstance(prio, bool) and prio != study.priority:
            out.append(f"priority {prio} beside the study's {study.priority}")
    return out


def tool_of(target: tuple) -> str:
    return target[3] if len(target) > 3 else "engine"


def published_for(test: str, metric: str, params: dict | None = None, condition: str = "idle",
                  tool: str = "engine") -> list[Published]:
    """Published rows whose method matches what (test, metric, params, condition) measures."""
    out = []
    for p in load_published():
        method = method_of(p.test)
        if method is None or our_condition(p) != condition:
            continue
        if any(target[0] == test and target[1] == metric and tool_of(target) == tool
               and params_match(params or {}, target[2], DEFAULTS.get(test)) for target in method.match):
            out.append(p)
    return out


def method_of(test: str) -> Method | None:
    return METHODS.get(test)


def params_match(params: dict, want: dict, defaults: dict | None = None) -> bool:
    params = dict(defaults or {}, **(params or {}))
    return all(str(params.get(k)) == str(v) for k, v in want.items())


# engine defaults of the options a method selects on, for runs that did not store them
DEFAULTS = {"preempt": {"event": "sem"}, "switch": {"threads": 2}, "shuffle": {"primitive": "sem"}}


def find(run: Run, target: tuple, condition: str) -> tuple[Measurement, Metric] | None:
    """(measurement, metric) of run for (test, metric, params) under condition."""
    test, metric, want = target[:3]
    tool = tool_of(target)
    for m in run.measurements:
        if m.test != test or not m.ok or (m.condition or "idle") != condition or m.tool != tool:
            continue
        if not params_match(m.params, want, DEFAULTS.get(test)):
            continue
        dist = m.metric(metric)
        if dist.count or dist.value is not None:   # a distribution, or a scalar
            return m, dist
    return None


def stats_of(dist: Metric) -> dict:
    """The distribution's figures in µs (what the tables show), with the count."""
    out = {k: (None if getattr(dist, k) is None else getattr(dist, k) / 1000.0) for k in ("min", "avg", "stddev", "max")}
    out["count"] = dist.count
    if not dist.count and isinstance(dist.value, (int, float)) and dist.unit == "ns":   # a scalar time
        out["value"] = dist.value / 1000.0
    return out


def beside_of(run: Run, method: Method, condition: str | None) -> list[dict]:
    """The analogues of a published row measured in run (set beside it, never compared)."""
    out = []
    for test, metric, params, why in method.beside:
        hit = find(run, (test, metric, params), condition) if condition else None
        if hit:
            b = {"measurement": hit[0].label, "test": test, "metric": metric, "stats": stats_of(hit[1]), "note": why}
            sweep = hit[0].extra.get("sweep")
            if isinstance(sweep, dict) and sweep.get("shortest_is_bound") is True:
                b["bound"] = "≤"      # nothing lost down to the sweep's floor: the period is at or below it
            out.append(b)
    return out


def place(run: Run, method: Method, condition: str | None) -> dict:
    """Where a published row sits in run: compared / different method / not measured."""
    placed = _place(run, method, condition)
    beside = beside_of(run, method, condition)
    return dict(placed, beside=beside) if beside else placed


def shown(placed: dict) -> bool:
    """A row's cell is shown when it holds a measurement of any kind or an analogue beside it."""
    return placed.get("status") != "not measured" or bool(placed.get("beside"))


def beside_text(b: dict) -> str:
    """One analogue set beside a row, in µs: its figures and what it is."""
    st = b.get("stats") or {}
    if st.get("value") is not None:
        figures = f"{b.get('bound', '')}{st['value']:,.1f} µs"
    else:
        figures = " / ".join(f"{k} {st[k]:,.1f}" for k in ("avg", "max") if st.get(k) is not None) + \
            f" µs of {st.get('count') or 0:,} samples"
    return f"{b['test']} {b['metric']}: {figures} ({b['note']})"


def _place(run: Run, method: Method, condition: str | None) -> dict:
    if condition is None:
        return {"status": "not measured", "note": "no load condition of rtgauge reproduces this one"}
    for target in method.match:
        hit = find(run, target, condition)
        if hit:
            m, dist = hit
            return {"status": "compared", "measurement": m.label, "test": target[0], "metric": target[1],
                    "tool": tool_of(target), "condition": condition, "stats": stats_of(dist)}
    for test, metric, params, why in method.near:
        hit = find(run, (test, metric, params), condition)
        if hit:
            return {"status": "different method", "measurement": hit[0].name, "test": test, "metric": metric,
                    "condition": condition, "note": why}
    if method.unmatched:
        return {"status": "different method", "note": method.unmatched}
    return {"status": "not measured", "condition": condition}


def comparability(placed: dict, study: Study, run: Run | None = None) -> dict:
    """A compared placement with whether its maximum is comparable with the study's:
    only at a comparable sample count (COMPARABLE_SHARE of the study's). Averages and
    minima settle quickly; the maximum keeps growing with the run's length. A wake-up
    latency max of too few samples is projected to the study's count with the worst-case
    model (the level exceeded once in that many cycles, pwcet.worst_case), where the
    model is credible; else the projection says why there is none."""
    if placed.get("status") != "compared":
        return placed
    m = measurement_of(run, placed) if run is not None else None
    mismatch = settings_mismatch(m, study) if m is not None else []
    if mismatch:
        placed = dict(placed, comparable=False, max_comparable=False,
                      settings_note="not comparable: " + "; ".join(mismatch),
                      max_note="not comparable: " + "; ".join(mismatch))
        return placed
    placed = dict(placed, comparable=True)
    if not study.samples:
        return placed
    count = samples_per_cpu(m, placed.get("metric") or "ti") if m is not None else \
        (placed.get("stats") or {}).get("count") or 0
    ok = count >= COMPARABLE_SHARE * study.samples
    placed = dict(placed, published_samples=study.samples, samples_per_cpu=count, max_comparable=ok)
    if not ok:
        placed["max_note"] = (f"max of {count:,} samples per CPU beside maxima of {study.samples:,}: not comparable "
                              "(a maximum grows with the number of samples; run the full profile)")
        projected = projection(run, placed, study.samples) if run is not None else None
        if projected is not None:
            placed["projected"] = projected
            placed["max_note"] += "; " + projection_text(projected)
    return placed


def measurement_of(run: Run, placed: dict) -> Measurement | None:
    """The measurement a placement names (its label and tool)."""
    tool = placed.get("tool", "engine")
    return next((m for m in run.measurements if m.label == placed.get("measurement") and m.tool == tool), None)


def projection(run: Run, placed: dict, samples: int) -> dict | None:
    """The level a wake-up latency measurement's worst-case model expects to be exceeded
    once in `samples` cycles (with its 95 % interval), or the reason it offers none. Only
    for the wake-up latency ti (the model is fitted to its per-window maxima)."""
    if placed.get("metric") != "ti":
        return None
    m = next((m for m in run.measurements if m.label == placed.get("measurement")), None)
    if m is None:
        return None
    w = worst_case(m, exceedance=1.0 / samples)
    if w is None:
        return {"samples": samples, "reason": "the measurement stored no per-window maxima"}
    if w.applicable and w.level_ns is not None:
        return {"samples": samples, "level_ns": w.level_ns, "ci_low_ns": w.ci_low_ns, "ci_high_ns": w.ci_high_ns}
    return {"samples": samples, "reason": w.reason or "the worst-case model does not apply"}


def projection_text(p: dict) -> str:
    if "level_ns" in p:
        ci = ("" if p.get("ci_low_ns") is None or p.get("ci_high_ns") is None else
              f" (95 % CI {p['ci_low_ns'] / 1000:,.1f}–{p['ci_high_ns'] / 1000:,.1f} µs)")
        return f"projected to {p['samples']:,} samples with the worst-case model: {p['level_ns'] / 1000:,.1f} µs{ci}"
    return f"no credible projection to {p['samples']:,} samples: {p['reason']}"


@dataclass
class Row:
    test: str
    condition: str                  # published
    our_condition: str | None
    method: Method
    published: dict = field(default_factory=dict)   # system -> {stat: Published}
    placed: dict = field(default_factory=dict)      # run id -> place()


def study_rows(study: Study, runs: list[Run]) -> list[Row]:
    rows: dict[tuple, Row] = {}
    for p in load_published():
        if p.source != study.source or p.test.startswith("tire_"):
            continue
        method = method_of(p.test)
        if method is None:
            continue
        key = (p.test, p.condition)
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(p.test, p.condition, our_condition(p), method)
            for run in runs:
                row.placed[run.id] = comparability(place(run, method, row.our_condition), study, run)
        row.published.setdefault(p.system, {})[p.statistic] = p
    groups: list[str] = []
    for r in rows.values():
        if r.method.group not in groups:
            groups.append(r.method.group)
    return sorted(rows.values(), key=lambda r: groups.index(r.method.group))


def systems_of(rows: list[Row]) -> list[str]:
    out: list[str] = []
    for r in rows:
        for s in r.published:
            if s not in out:
                out.append(s)
    return out


def studies(runs: list[Run]) -> list[tuple[Study, list[Row]]]:
    """Each study with its rows; a study none of whose rows any run measured (compared
    or not) is left out."""
    out = []
    for study in STUDIES:
        rows = study_rows(study, runs)
        if any(pl.get("measurement") or pl.get("beside") for r in rows for pl in r.placed.values()):
            out.append((study, rows))
    return out


def published_value(p: Published | None) -> dict | None:
    if p is None:
        return None
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(p.unit)
    return {"text": p.text, "bound": p.bound, "us": None if p.value is None or scale is None else p.value * scale}


def studies_json(runs: list[Run]) -> list[dict]:
    """What the report's published tables show, for `show --json`."""
    out = []
    for study, rows in studies(runs):
        out.append({
            "source": study.source, "title": study.title, "layout": study.layout, "unit": "us",
            "systems": systems_of(rows),
            "rows": [{"test": r.test, "group": r.method.group, "published_method": r.method.what,
                      "our_method": r.method.ours, "condition": r.condition, "our_condition": r.our_condition,
                      "published": {s: {k: published_value(v) for k, v in stats.items()}
                                    for s, stats in r.published.items()},
                      "measured": {str(k): v for k, v in r.placed.items()}} for r in rows]})
    return out


# ---- behaviour verdicts ------------------------------------------------------

# (engine test, verdict, options) -> (published verdict: True = pass, the finding)
# from docs/method.md ("The microbenchmark catalogue"): with semaphores and
# priority-inheritance mutexes none of the systems studied was vulnerable to priority
# inversion; Linux was vulnerable with spin locks.
PUBLISHED_VERDICTS: list[tuple[str, str, dict, bool, str]] = [
    ("pi", "protected", {"primitive": "pi-mutex"}, True,
     "not vulnerable with priority-inheritance mutexes (every system studied)"),
    ("pi", "protected", {"primitive": "sem"}, True,
     "not vulnerable with semaphores (every system studied)"),
    ("pi", "protected", {"primitive": "spin"}, False, "Linux vulnerable with spin locks"),
    ("mut-arc", "inversion_avoided", {"protocol": "inherit"}, True,
     "MUT-B-ARC: the mutex avoids priority inversion (priority inheritance)"),
]
VERDICT_DEFAULTS = {"pi": {"primitive": "pi-mutex"}, "mut-arc": {"protocol": "inherit"}}


def published_verdict(test: str, verdict: str, params: dict) -> tuple[bool, str] | None:
    for t, v, want, ok, text in PUBLISHED_VERDICTS:
        if t == test and v == verdict and params_match(params, want, VERDICT_DEFAULTS.get(test)):
            return ok, text
    return None


def published_verdicts(runs: list[Run]) -> list[dict]:
    """Behaviour verdicts that have a published counterpart: per row the published
    verdict and, per run, the measured one and whether they agree."""
    rows: dict[tuple, dict] = {}
    for run in runs:
        for m in run.measurements:
            for name, v in m.verdicts.items():
                pub = published_verdict(m.test, name, m.params)
                if pub is None:
                    continue
                key = (m.test, name, pub[1], m.condition or "idle")
                row = rows.setdefault(key, {"test": m.test, "verdict": name, "condition": key[3],
                                            "published_pass": pub[0], "published": pub[1], "cells": {}})
                row["cells"][run.id] = {"pass": v.passed, "detail": v.detail or "", "agrees": v.passed == pub[0]}
    return [rows[k] for k in sorted(rows, key=lambda k: tuple(str(x) for x in k))]


# ---- histograms of several runs in one figure ---------------------------------

def overlay_curves(runs: list[Run]) -> dict[str, list[tuple[Run, Metric]]]:
    """condition -> [(run, the engine latency measurement's ti distribution)], the
    first latency measurement of each run under that condition; only conditions
    measured by two or more runs (the cyclictest study's figures)."""
    by_cond: dict[str, list[tuple[Run, Metric]]] = {}
    for run in runs:
        seen = set()
        for m in run.measurements:
            cond = m.condition or "idle"
            ti = m.metric("ti")
            if m.test != "latency" or m.tool != "engine" or not m.ok or cond in seen or not ti.count:
                continue
            seen.add(cond)
            by_cond.setdefault(cond, []).append((run, ti))
    return {c: v for c, v in by_cond.items() if len(v) >= 2}
