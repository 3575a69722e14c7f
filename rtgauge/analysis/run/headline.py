"""The headline of one run: worst-case wake-up latency idle and loaded, the
tire model's largest hard-real-time size, and a rating from 0 to 5 stars with the
criteria written down here and in docs/report.md.

Rating (each class needs every wake-up latency measurement of the run, idle and
loaded, ours; a job's worst case is the worse of ours and its cyclictest cross-check's,
worst_case_of; a missed deadline is a late cycle or a skipped deadline, late_periods):
  5 ★  hard real-time, out of the box: zero missed deadlines and worst-case
       wake-up latency ≤ the budget (default 100 µs), with no real-time tuning
  4 ★  hard real-time after tuning (the same, on a tuned system)
  3 ★  soft real-time, out of the box: missed deadlines ≤ 0.1 % of cycles and
       worst case ≤ 10 ms (one period at 100 Hz)
  2 ★  soft real-time after tuning
  1 ★  real-time scheduling works, but not even soft real-time was met
  0 ★  measured without real-time scheduling (fallback): says nothing about real time
"Tuned" means the kernel command line or the system carries real-time tuning
(TUNING_PARAMETERS, isolated CPUs, a tuned profile); the kernel itself (mainline,
PREEMPT_RT) is the system being rated, not tuning."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtgauge.analysis.run.rows import cross_checks, latency_measurements, latency_row
from rtgauge.records import Run
from rtgauge.analysis.run.tire import headline_limits, pretest_threads, pretest_threads_sentence, thread_label

DEFAULT_BUDGET_US = 100.0
SOFT_MISS_RATIO = 0.001
SOFT_WORST_US = 10_000.0
TUNING_PARAMETERS = ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "threadirqs", "preempt",
                     "idle", "processor.max_cstate", "intel_idle.max_cstate", "nosmt", "skew_tick",
                     "nosoftlockup", "nowatchdog", "nmi_watchdog", "tsc", "rcu_nocb_poll", "kthread_cpus")


@dataclass
class Rating:
    stars: int | None
    klass: str
    tuned: bool
    reasons: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)     # why it is not rated (evidence_flags)
    unrated_class: str | None = None                   # what the figures alone would read

    @property
    def glyphs(self) -> str:
        return "not rated" if self.stars is None else "★" * self.stars + "☆" * (5 - self.stars)

    @property
    def label(self) -> str:
        """The rating in one phrase: the stars and the class, or "not rated" once."""
        return self.glyphs if self.stars is None else f"{self.glyphs} {self.klass}"


def tuning_of(facts: dict) -> list[str]:
    """What in the system is real-time tuning (empty: out of the box)."""
    found = []
    for word in str(facts.get("cmdline") or "").split():
        key = word.split("=", 1)[0]
        if key in TUNING_PARAMETERS:
            found.append(word)
    if facts.get("tuned_profile"):
        found.append(f"tuned profile {facts['tuned_profile']}")
    if facts.get("isolcpus") and not any(w.startswith("isolcpus") for w in found):
        found.append(f"isolated CPUs {facts['isolcpus']}")
    return found


def engine_latency_rows(run: Run) -> list[dict]:
    """Our engine's latency rows, each with its worst case (worst_case_of) and its
    periods (analysis.run.rows.late_periods: a skipped deadline is a period not served on time)."""
    rows = []
    for m in latency_measurements(run):
        if m.tool != "engine":
            continue
        row = latency_row(m)
        row["cycles"] = row["wakeups"] if row["wakeups"] else row["samples"]
        row["periods"] = row["periods"] if row["periods"] else row["cycles"]
        row.update(worst_case_of(run, m))
        rows.append(row)
    return rows


def worst_case_of(run: Run, m) -> dict:
    """The one rule for a job's worst case, used by the rating, the summary, the report,
    `compare` and the exports: the larger of our engine's maximum and that of the
    cyclictest cross-check of the same job, condition, round and segment — when the two
    tools disagree the worse is the figure, never the better (docs/report.md).
    {"worst_us", "worst_tool", "engine_max_us", "cyclictest_max_us"}."""
    ours = latency_row(m)["max_us"]
    ref = next((r for r in run.measurements if r.key == (f"{m.name}/cyclictest", m.round, m.segment)
                and r.ok is not False), None)
    theirs = latency_row(ref)["max_us"] if ref is not None and latency_row(ref) else None
    worst, tool = ours, "engine"
    if theirs is not None and (worst is None or theirs > worst):
        worst, tool = theirs, "cyclictest"
    return {"worst_us": worst, "worst_tool": tool, "engine_max_us": ours, "cyclictest_max_us": theirs}


def worst_by_condition(rows: list[dict]) -> tuple[float | None, float | None, str | None]:
    """The worst case (worst_case_of) idle, and loaded with its condition."""
    idle = [r["worst_us"] for r in rows if r["condition"] == "idle" and r["worst_us"] is not None]
    loaded = [(r["worst_us"], r["condition"]) for r in rows if r["condition"] != "idle" and r["worst_us"] is not None]
    worst_loaded = max(loaded) if loaded else (None, None)
    return (max(idle) if idle else None), worst_loaded[0], worst_loaded[1]


MIN_RATED_CYCLES = 20_000      # per latency job: zero misses in 20,000 cycles bound the miss rate
                               # at ≤ 0.015 % (exact binomial, 95 %), below the soft class's 0.1 %
CROSS_CHECK_FACTOR = 2.0       # engine and cyclictest worst cases further apart than this disagree


def disagreements(run: Run) -> list[dict]:
    """The engine/cyclictest pairs whose worst cases differ by more than CROSS_CHECK_FACTOR."""
    out = []
    for pair in cross_checks(run.measurements, ("cyclictest",)):
        ours, theirs, ratio = pair["max_us"]
        if ours and theirs and (ours / theirs > CROSS_CHECK_FACTOR or theirs / ours > CROSS_CHECK_FACTOR):
            out.append({"name": pair["name"], "condition": pair["condition"], "engine_us": ours,
                        "cyclictest_us": theirs, "factor": max(ours / theirs, theirs / ours)})
    return out


def evidence_flags(rows: list[dict], facts: dict, crossed: list[dict]) -> list[str]:
    """Why the evidence cannot carry a rating: each a sentence (empty: it can)."""
    flags = []
    short = [r for r in rows if (r["cycles"] or 0) < MIN_RATED_CYCLES]
    if short:
        r = min(short, key=lambda r: r["cycles"] or 0)
        flags.append(f"too short: {r['name']} measured {r['cycles'] or 0:,} cycles; a rating needs "
                     f"{MIN_RATED_CYCLES:,} per latency job (its 0.1 % miss claim needs that many to be bounded)")
    if rows and not any(r["condition"] != "idle" for r in rows):
        flags.append("idle only: a rating needs a loaded condition too (a real-time job runs beside other work)")
    virt = facts.get("virtualization") or {}
    if virt.get("emulated"):
        flags.append(f"emulated ({virt.get('hypervisor') or 'an emulator'}): the timing is the emulator's, "
                     "not the hardware's or the operating system's")
    elif virt.get("vm"):
        flags.append(f"virtualised ({virt.get('hypervisor') or 'a hypervisor'}): the host can stop this guest "
                     "at any moment for any time, so the figures describe this VM on this host now, not the "
                     "operating system on bare metal; a rating claims the latter")
    for d in crossed:
        flags.append(f"cross-check disagrees: {d['name']} ({d['condition']}) worst case {d['engine_us']:,.1f} µs "
                     f"(engine) vs {d['cyclictest_us']:,.1f} µs (cyclictest), {d['factor']:.2f}× apart, more than "
                     f"{CROSS_CHECK_FACTOR:g}×; the figures below use the worse")
    return flags


def rate(rows: list[dict], facts: dict, budget_us: float = DEFAULT_BUDGET_US,
         crossed: list[dict] | None = None) -> Rating:
    """The class the figures reach, or "not rated" with every reason the evidence
    cannot carry a claim (the class the figures alone would reach is said too)."""
    tuning = tuning_of(facts)
    tuned = bool(tuning)
    how = "after tuning (" + ", ".join(tuning) + ")" if tuned else "out of the box"
    crossed = crossed or []
    if not rows:
        return Rating(None, "no wake-up latency measured", tuned)
    if any(r["fallback"] for r in rows):
        return Rating(0, "not real-time: measured without real-time scheduling (fallback)", tuned,
                      ["a latency job ran as SCHED_OTHER; run as root or grant CAP_SYS_NICE"])
    worst = max(r["worst_us"] or 0 for r in rows)
    misses = sum(r["misses"] or 0 for r in rows)
    skipped = sum(r["skipped"] or 0 for r in rows)
    ratio = max((r["misses"] or 0) / max(r["periods"] or 1, 1) for r in rows)
    reasons = [f"worst-case wake-up latency {worst:,.1f} µs (budget {budget_us:,.0f} µs)",
               f"{misses} missed deadline{'s' if misses != 1 else ''}"
               + (f", {skipped:,} of them skipped" if skipped else "") + f" (worst job {ratio:.3%} of periods)"]
    if misses == 0 and worst <= budget_us:
        stars, klass = (4 if tuned else 5), f"hard real-time {how}"
    elif ratio <= SOFT_MISS_RATIO and worst <= SOFT_WORST_US:
        stars, klass = (2 if tuned else 3), f"soft real-time {how}"
    else:
        stars, klass = 1, f"not soft real-time {how}: real-time scheduling works but deadlines are missed"
    flags = evidence_flags(rows, facts, crossed)
    if flags:
        return Rating(None, "not rated", tuned, flags + reasons + [f"the figures alone would read: {klass}"],
                      flags=flags, unrated_class=klass)
    return Rating(stars, klass, tuned, reasons)


def headline(run: Run, budget_us: float = DEFAULT_BUDGET_US) -> dict:
    facts = run.system
    rows = engine_latency_rows(run)
    worst_idle, worst_loaded, loaded_condition = worst_by_condition(rows)
    limits = headline_limits(run)
    for lim in limits:
        lim["threads_label"] = thread_label(lim["threads"], facts)
    fallback = [m.label for m in run.measurements if latency_row(m) and m.fallback]
    return {
        "run": run.id, "rating": rate(rows, facts, budget_us, disagreements(run)), "worst_idle_us": worst_idle,
        "worst_loaded_us": worst_loaded, "loaded_condition": loaded_condition,
        "misses": sum(r["misses"] or 0 for r in rows) if rows else None,
        "skipped": sum(r["skipped"] or 0 for r in rows) if rows else None,
        "tire": limits, "fallback": fallback, "status": run.status,
        "tire_pretest": [dict(c, text=pretest_threads_sentence(c)) for c in pretest_threads(run)],
    }
