"""The published studies' stated conclusions, checked on the measured runs.

Each study ends with findings about the systems it measured (docs/studies.md,
"Conclusions checked"). Here each finding is a check evaluated on the runs of a report:
per run where one system's data decide it ("the averages are about an order of
magnitude below the maxima"), across every pair of runs where it compares systems ("the
real-time kernel's worst case is below the general-purpose one's"). A check reads:

- "holds" / "does not hold", with the figures that decided it;
- "not decidable", with the reason (`reason`: "not measured", "needs a second system",
  "emulated", "too few samples", "not this system's claim") and what would decide it
  (`decide`).

A system measured under an instruction-set emulator (the facts' `emulated: true`:
QEMU's TCG, qemu-user) is not a witness of a claim about timing: its figures are the
emulator's. A virtual machine with hardware-assisted virtualisation is a witness, and
the check says which of its runs were virtual machines."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtgauge.records import Run
from rtgauge.analysis.run.tire import HEADLINE_PERIOD_MS, headline_limits, realfast_curves, same_period, tire_points
from rtgauge.analysis.studies.published import (COMPARABLE_SHARE, CYCLICTEST, find, method_of, our_condition,
                                                samples_per_cpu)
from rtgauge.published import load_published

HOLDS, FAILS, UNDECIDED = "holds", "does not hold", "not decidable"
# why a check is not decidable
NOT_MEASURED, NEEDS_SECOND, EMULATED, TOO_FEW, NOT_ITS_CLAIM = (
    "not measured", "needs a second system", "emulated", "too few samples", "not this system's claim")

# "about an order of magnitude": the average at most this share of the maximum
ORDER_OF_MAGNITUDE = 0.2
# "much worse": the loaded maximum at least this many times the idle one
MUCH_WORSE = 2.0
# "multiple times larger": the median ratio of the worst cases at least this
MULTIPLE_TIMES = 2.0
NOT_HARDWARE = "emulated (the facts say emulated: true): its timing is the emulator's, not a hardware's"


@dataclass(frozen=True)
class Conclusion:
    source: str          # the study (published.csv's source)
    key: str             # a stable name for scripts
    claim: str           # the finding, in our words
    where: str           # where the publication states it
    decide: str = ""     # what measurement decides it


@dataclass
class Check:
    conclusion: Conclusion
    status: str
    detail: str
    per_run: dict        # run id -> {"status", "detail"[, "reason"]} for per-run checks; {} for cross-system ones
    reason: str | None = None       # why it is not decidable (None when decided)
    pairs: list = field(default_factory=list)   # cross-system: one entry per pair of runs that decided it

    @property
    def decided(self) -> bool:
        return self.status in (HOLDS, FAILS)

    def to_json(self) -> dict:
        return {"source": self.conclusion.source, "key": self.conclusion.key, "claim": self.conclusion.claim,
                "where": self.conclusion.where, "status": self.status, "detail": self.detail,
                "reason": self.reason, "decide": None if self.decided else self.conclusion.decide,
                "runs": {str(k): v for k, v in self.per_run.items()}, "pairs": self.pairs}

    def line(self) -> str:
        """One line for a terminal: the status, the claim and why."""
        why = self.detail if self.decided else f"{self.reason}: {self.detail}" if self.detail else self.reason
        more = "" if self.decided or not self.conclusion.decide else f" (decided by: {self.conclusion.decide})"
        return f"{self.status}: {self.conclusion.claim} — {why}{more}"


def decided(ok: bool, detail: str) -> tuple:
    return (HOLDS if ok else FAILS), detail, None


def undecided(reason: str, detail: str) -> tuple:
    return UNDECIDED, detail, reason


def _latency(run: Run, metric: str, condition: str, tool: str = "engine"):
    for m in run.measurements:
        if m.test == "latency" and m.tool == tool and m.ok and (m.condition or "idle") == condition:
            d = m.metric(metric)
            if d.count and d.max is not None and d.avg is not None:
                return d
    return None


def _is_realtime(run: Run) -> bool | None:
    s = run.system or {}
    if s.get("realtime") is not None:
        return bool(s.get("realtime"))
    model = str(s.get("preempt_model") or "")
    return True if model == "PREEMPT_RT" else (False if model else None)


def _kind(run: Run) -> str:
    return {True: "PREEMPT_RT", False: "mainline"}.get(_is_realtime(run), "kernel unknown")


def _emulated(run: Run) -> bool:
    """Emulated, as the facts decide it (rtgauge/sysinfo/facts.py: `emulated`, from
    `virtualization.emulated`): an instruction-set emulator ran the system. A virtual
    machine is not emulated; unknown (None) is not emulated."""
    s = run.system or {}
    virt = s.get("virtualization")
    said = s.get("emulated")
    if said is None and isinstance(virt, dict):
        said = virt.get("emulated")
    return said is True


def _vm(run: Run) -> str | None:
    """The hypervisor's name when the run's system is a virtual machine (not emulated)."""
    virt = (run.system or {}).get("virtualization")
    if isinstance(virt, dict) and virt.get("vm") and not _emulated(run):
        return str(virt.get("kind") or virt.get("hypervisor") or "a hypervisor")
    return None


def _per_run(runs: list[Run], one) -> tuple[str, str, str | None, dict]:
    """Evaluate one(run) -> (status, detail, reason) per run; the check holds when every
    deciding run holds, fails when one fails, is not decidable when none decides."""
    per = {}
    for r in runs:
        status, detail, reason = (undecided(EMULATED, NOT_HARDWARE) if _emulated(r) else one(r))
        per[r.id] = {"status": status, "detail": detail, **({"reason": reason} if reason else {})}
    decided_ = [v for v in per.values() if v["status"] in (HOLDS, FAILS)]
    if not decided_:
        # the reason of a run the claim is about, before "not this system's claim"
        first = next((v for v in per.values() if v.get("reason") != NOT_ITS_CLAIM),
                     next(iter(per.values()), {"detail": "no run", "reason": NOT_MEASURED}))
        return UNDECIDED, first["detail"], first.get("reason", NOT_MEASURED), per
    failed = sum(v["status"] == FAILS for v in decided_)
    if failed:
        return FAILS, f"{failed} of {len(decided_)} runs", None, per
    return HOLDS, f"{len(decided_)} of {len(decided_)} runs", None, per


def _across(runs: list[Run], value, pair, needs: str) -> tuple[str, str, str | None, list]:
    """A cross-system check over every pair (a PREEMPT_RT run, a mainline run) whose
    value(run) is not None: pair(rt, rt_value, gp, gp_value) -> (status, detail) with
    status HOLDS, FAILS or None (the pair shares nothing to decide on). Holds when every
    deciding pair holds, fails when one fails. Emulated runs are left out and named."""
    rt, gp, emulated, vms = [], [], [], []
    for r in runs:
        kind = _is_realtime(r)
        if kind is None:
            continue
        v = value(r)
        if v is None or v == {}:
            continue
        if _emulated(r):
            emulated.append(r.id)
            continue
        if _vm(r):
            vms.append(f"run {r.id} ({_vm(r)})")
        (rt if kind else gp).append((r, v))
    left_out = (f"; left out, emulated: run{'s' if len(emulated) > 1 else ''} "
                f"{', '.join(map(str, emulated))}" if emulated else "")
    if not rt or not gp:
        if emulated:
            return UNDECIDED, NOT_HARDWARE + left_out, EMULATED, []
        return UNDECIDED, needs, NEEDS_SECOND, []
    pairs = []
    for a, va in rt:
        for b, vb in gp:
            status, text = pair(a, va, b, vb)
            pairs.append({"realtime_run": a.id, "mainline_run": b.id, "status": status or UNDECIDED,
                          "detail": text})
    judged = [p for p in pairs if p["status"] in (HOLDS, FAILS)]
    if not judged:
        return UNDECIDED, pairs[0]["detail"] + left_out, NOT_MEASURED, pairs
    failed = [p for p in judged if p["status"] == FAILS]
    vm_note = (f"; virtual machines: {', '.join(vms)} (their timings are the VM's)" if vms else "")
    summary = "; ".join(f"runs {p['realtime_run']}/{p['mainline_run']}: {p['detail']}" for p in judged)
    head = (f"{len(failed)} of {len(judged)} pairs fail" if failed else
            f"{len(judged)} of {len(judged)} pair{'s' if len(judged) > 1 else ''} hold")
    return (FAILS if failed else HOLDS), f"{head} ({summary}){left_out}{vm_note}", None, pairs


# ---- the interrupt study ------------------------------------------------------

AVG_TENTH = Conclusion("rtlinux-rtems-2000", "averages-tenth-of-maxima",
                       "the average latencies are about an order of magnitude below the maxima",
                       "section 3.2, after Table 1",
                       "per run: avg/max of ti_irq and ti_sched (latency --split), idle and ping-tcp")
LOADED_WORSE = Conclusion("rtlinux-rtems-2000", "loaded-worse-than-idle",
                          "under the network load the worst case is much worse than idle (RTLinux: 13.5 → 196.8 µs)",
                          "Table 1", "per run: the wake-up latency (split where available) idle and under ping-tcp")


def _avg_tenth(run: Run) -> tuple:
    figures = []
    for cond in ("idle", "ping-tcp"):
        for metric in ("ti_irq", "ti_sched"):
            d = _latency(run, metric, cond)
            if d is not None and d.max > 0:
                figures.append((cond, metric, d.avg / d.max))
    if not figures:
        return undecided(NOT_MEASURED, "no split wake-up (latency --split) in this run")
    worst = max(figures, key=lambda f: f[2])
    return decided(worst[2] <= ORDER_OF_MAGNITUDE,
                   f"largest avg/max {worst[2]:.2f} ({worst[1]}, {worst[0]}; holds at ≤ {ORDER_OF_MAGNITUDE})")


def _loaded_worse(run: Run) -> tuple:
    for metric in ("ti_irq", "ti"):
        idle, loaded = _latency(run, metric, "idle"), _latency(run, metric, "ping-tcp")
        if idle is not None and loaded is not None and idle.max > 0:
            ratio = loaded.max / idle.max
            return decided(ratio >= MUCH_WORSE,
                           f"{metric} max {loaded.max / 1000:,.1f} µs loaded against {idle.max / 1000:,.1f} µs idle "
                           f"(×{ratio:.2f}; holds at ×{MUCH_WORSE:g} or more)")
    return undecided(NOT_MEASURED, "needs the wake-up latency idle and under ping-tcp")


# ---- the cyclictest study -----------------------------------------------------

CYCLICTEST_SOURCE = "xenomai3-arm-2016"
STRESSED_WORSE = Conclusion(CYCLICTEST_SOURCE, "stressed-average-worse",
                            "the CPU stressor raises the average wake-up latency (Xenomai: about 9 → 18 µs)",
                            "section 2.3", "per run: the wake-up latency idle and under cpu")
RT_BELOW_MAINLINE = Conclusion(CYCLICTEST_SOURCE, "rt-below-mainline",
                               "PREEMPT_RT's worst case is far below mainline's (mainline's easily exceeds 1 ms)",
                               "section 2.3, Table 2",
                               "a PREEMPT_RT run and a mainline run of the wake-up latency (cyclictest-study)")
RT_AVERAGE_20 = Conclusion(CYCLICTEST_SOURCE, "rt-average-above-20us",
                           "PREEMPT_RT's average user-level wake-up latency is above 20 µs (Table 2: 21 idle, "
                           "25 stressed)", "section 2.3, Table 2",
                           "a PREEMPT_RT run of the wake-up latency, idle and under cpu")
RT_NOT_50 = Conclusion(CYCLICTEST_SOURCE, "rt-cannot-guarantee-50us",
                       "PREEMPT_RT cannot guarantee a 50 µs maximum wake-up latency (Table 2: 52 idle, 62 stressed)",
                       "section 2.3, Table 2",
                       "a PREEMPT_RT run of the wake-up latency with the study's 1,000,000 wake-ups per CPU "
                       "(cyclictest-study)")
RT_ABOVE_100_STRESSED = Conclusion(CYCLICTEST_SOURCE, "rt-above-100us-stressed",
                                   "under the CPU stressor PREEMPT_RT's worst case exceeds 100 µs in some cases",
                                   "section 2.3",
                                   "a PREEMPT_RT run of the wake-up latency under cpu with the study's 1,000,000 "
                                   "wake-ups per CPU (cyclictest-study)")
MAINLINE_ABOVE_1MS = Conclusion(CYCLICTEST_SOURCE, "mainline-above-1ms",
                                "mainline's worst case easily exceeds 1 ms (Table 2: 1046 idle, 1097 stressed)",
                                "section 2.3, Table 2",
                                "a mainline run of the wake-up latency, idle and under cpu, with the study's "
                                "1,000,000 wake-ups per CPU (cyclictest-study)")
STUDY_SAMPLES = 1_000_000      # the cyclictest study's wake-ups a run (section 2.1.3)


def _study_latency(run: Run, condition: str):
    """The measurement the cyclictest study's rows sit beside (cyclictest where it ran,
    else the engine's latency: rtgauge/analysis/studies/published.py's order), as
    (measurement, ti distribution), or None."""
    for target in CYCLICTEST.match:
        hit = find(run, target, condition)
        if hit is not None and hit[1].avg is not None and hit[1].max is not None:
            return hit
    return None


def _stressed_worse(run: Run) -> tuple:
    idle, cpu = _latency(run, "ti", "idle"), _latency(run, "ti", "cpu")
    if idle is None or cpu is None:
        return undecided(NOT_MEASURED, "needs the wake-up latency idle and under cpu")
    return decided(cpu.avg > idle.avg,
                   f"average {cpu.avg / 1000:,.1f} µs under cpu against {idle.avg / 1000:,.1f} µs idle")


def _worst(run: Run) -> float | None:
    maxima = [d.max for c in ("idle", "cpu") if (d := _latency(run, "ti", c)) is not None]
    return max(maxima) if maxima else None


def _rt_below_mainline(runs: list[Run]) -> tuple:
    def pair(a, wa, b, wb):
        return (HOLDS if wa < wb else FAILS), (f"PREEMPT_RT worst {wa / 1000:,.1f} µs against mainline "
                                               f"{wb / 1000:,.1f} µs")
    return _across(runs, _worst, pair, "needs a PREEMPT_RT run and a mainline run of the wake-up latency")


def _of_kind(run: Run, realtime: bool) -> tuple | None:
    """None when run is of the kind the claim is about, else the undecided answer."""
    if _is_realtime(run) is realtime:
        return None
    want = "PREEMPT_RT" if realtime else "mainline"
    return undecided(NOT_ITS_CLAIM, f"a claim about {want} kernels; this run's kernel is {_kind(run)}")


def _per_cpu(m, metric: str = "ti") -> int:
    return samples_per_cpu(m, metric)


def _exceeds(run: Run, realtime: bool, conditions: tuple[str, ...], limit_ns: float, every: bool) -> tuple:
    """Whether the worst case of the study's latency exceeds limit_ns: in one of the
    conditions (every=False: a guarantee is broken once), or in each (every=True). A
    maximum only grows with more samples: an exceedance decides at any count, a maximum
    below the limit only at the study's count (half of it, as the matcher's comparable
    maxima)."""
    other = _of_kind(run, realtime)
    if other is not None:
        return other
    found = [(c, hit) for c in conditions if (hit := _study_latency(run, c)) is not None]
    if not found or (every and len(found) < len(conditions)):
        return undecided(NOT_MEASURED, f"needs the wake-up latency {' and '.join(conditions)}")
    text = "; ".join(f"{c}: max {d.max / 1000:,.1f} µs of {_per_cpu(m):,} per CPU ({m.label})"
                     for c, (m, d) in found)
    over = [c for c, (m, d) in found if d.max > limit_ns]
    if (every and len(over) == len(found)) or (not every and over):
        return decided(True, f"{text}; above {limit_ns / 1000:,.0f} µs")
    short = [c for c, (m, d) in found if d.max <= limit_ns and _per_cpu(m) < COMPARABLE_SHARE * STUDY_SAMPLES]
    if short:
        return undecided(TOO_FEW, f"{text}; at or below {limit_ns / 1000:,.0f} µs with fewer wake-ups than the "
                                  f"study's {STUDY_SAMPLES:,}: a longer run may still exceed it")
    return decided(False, f"{text}; not above {limit_ns / 1000:,.0f} µs")


def _rt_average_20(run: Run) -> tuple:
    other = _of_kind(run, True)
    if other is not None:
        return other
    found = [(c, hit) for c in ("idle", "cpu") if (hit := _study_latency(run, c)) is not None]
    if not found:
        return undecided(NOT_MEASURED, "needs the wake-up latency idle or under cpu")
    text = "; ".join(f"{c}: average {d.avg / 1000:,.1f} µs ({m.label})" for c, (m, d) in found)
    return decided(all(d.avg > 20_000 for _, (m, d) in found), f"{text}; holds above 20 µs")


def _rt_not_50(run: Run) -> tuple:
    return _exceeds(run, True, ("idle", "cpu"), 50_000, every=False)


def _rt_above_100_stressed(run: Run) -> tuple:
    return _exceeds(run, True, ("cpu",), 100_000, every=False)


def _mainline_above_1ms(run: Run) -> tuple:
    return _exceeds(run, False, ("idle", "cpu"), 1_000_000, every=True)


# ---- the evaluation suite -----------------------------------------------------

SUITE_SOURCE = "qnx65-vs-linux-rt-2012"
SUITE_MULTIPLE = Conclusion(SUITE_SOURCE, "worst-case-multiple-times",
                            "the RTOS's worst cases are typically several times smaller than Linux's (QNX against "
                            "Linux-rt: about ×6 in the sustained interrupt test); here the real-time kernel takes "
                            "the RTOS's side", "section 5",
                            "the evaluation suite (rtos-evaluation) on a PREEMPT_RT kernel and on a mainline one")


def _suite_max(run: Run) -> dict | None:
    """{published test: the matching measurement's max} for the suite's rows (the
    matcher's methods, rtgauge/analysis/studies/published.py), None when there is none."""
    out = {}
    for p in load_published():
        if p.source != SUITE_SOURCE or p.statistic != "max" or p.test in out:
            continue
        method, cond = method_of(p.test), our_condition(p)
        for target in (method.match if method and cond else ()):
            hit = find(run, target, cond)
            if hit is not None and hit[1].max:
                out[p.test] = hit[1].max
                break
    return out or None


def _suite_multiple(runs: list[Run]) -> tuple:
    def pair(a, ma, b, mb):
        common = sorted(set(ma) & set(mb))
        if not common:
            return None, "the two runs share no test of the suite"
        ratios = sorted(mb[k] / max(ma[k], 1e-9) for k in common)
        median = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1]
                                                                   + ratios[len(ratios) // 2]) / 2
        smaller = sum(ma[k] < mb[k] for k in common)
        return (HOLDS if median >= MULTIPLE_TIMES else FAILS), (
            f"mainline's worst cases ×{median:.2f} the PREEMPT_RT ones (median over {len(common)} tests; "
            f"PREEMPT_RT smaller in {smaller}; holds at ×{MULTIPLE_TIMES:g} or more)")
    return _across(runs, _suite_max, pair, "needs the evaluation suite on a PREEMPT_RT and a mainline kernel")


# ---- the tire study -----------------------------------------------------------

TIRE_SOURCE = "rtos-vs-gpos-tire-2015"
GPOS_FASTER = Conclusion(TIRE_SOURCE, "gpos-faster-realfast",
                         "the general-purpose system finishes the real-fast runs sooner", "section 5, Figs. 5-6",
                         "tire real-fast runs (tire-study) on a PREEMPT_RT and a mainline kernel")
RTOS_HOLDS_MORE = Conclusion(TIRE_SOURCE, "rtos-better-realtime",
                             "the real-time system holds hard real time up to larger tires, each with its native "
                             "policy (FIFO on the real-time system, the fair scheduler on the other)",
                             "section 5, Figs. 9-10",
                             "tire sweeps (tire-study) on a PREEMPT_RT and a mainline kernel")
POLICY_NOT_CAUSE = Conclusion(TIRE_SOURCE, "policy-not-the-cause",
                              "the scheduling policy is not the cause: with the same policy the real-time system "
                              "still holds larger tires (FIFO) and is still slower real-fast (the fair scheduler), "
                              "and FIFO does not improve the general-purpose system's limit",
                              "section 4.4, Figs. 7 and 13; section 5",
                              "tire sweeps with both policies (tire-study: other and fifo) on a PREEMPT_RT and a "
                              "mainline kernel")


def _realfast_total(run: Run) -> dict | None:
    out = {}
    for (solver, policy), curves in realfast_curves(tire_points(run)).items():
        for threads, pts in curves.items():
            for masses, wall in pts:
                out[(solver, policy, threads, masses)] = wall
    return out or None


def _held_by_policy(run: Run) -> dict | None:
    """{policy: the largest size held at 100 Hz over the thread counts} (0 where every
    size tried was late), from what analysis.tire stores as the limits."""
    out: dict = {}
    for x in headline_limits(run):
        if not same_period(x["period_ms"], HEADLINE_PERIOD_MS):
            continue
        if x.get("max_masses") is None and not x.get("lost_at"):
            continue
        out[x["policy"]] = max(out.get(x["policy"], 0), x.get("max_masses") or 0)
    return out or None


def _faster(a: dict, b: dict, policy: str | None = None) -> tuple[int, int] | None:
    """(configurations where b's wall time is below a's, shared configurations)."""
    common = [k for k in set(a) & set(b) if policy is None or k[1] == policy]
    return (sum(b[k] < a[k] for k in common), len(common)) if common else None


def _gpos_faster(runs: list[Run]) -> tuple:
    def pair(a, ta, b, tb):
        got = _faster(ta, tb)
        if got is None:
            return None, "the two runs share no real-fast configuration"
        faster, n = got
        return (HOLDS if faster * 2 > n else FAILS), f"mainline faster in {faster} of {n} configurations"
    return _across(runs, _realfast_total, pair, "needs tire real-fast runs on a PREEMPT_RT and a mainline kernel")


NATIVE = {True: "fifo", False: "other"}


def _rtos_holds_more(runs: list[Run]) -> tuple:
    def pair(a, ha, b, hb):
        if NATIVE[True] not in ha or NATIVE[False] not in hb:
            return None, "needs the real-time run's fifo limit and the mainline run's other (fair) limit"
        x, y = ha[NATIVE[True]], hb[NATIVE[False]]
        return (HOLDS if x > y else FAILS), f"held up to {x:,} masses (fifo) against {y:,} (other) at 100 Hz"
    return _across(runs, _held_by_policy, pair, "needs tire sweeps on a PREEMPT_RT and a mainline kernel")


def _tire_both(run: Run) -> dict | None:
    held, fast = _held_by_policy(run), _realfast_total(run)
    return {"held": held or {}, "fast": fast or {}} if (held or fast) else None


def _policy_not_cause(runs: list[Run]) -> tuple:
    def pair(a, va, b, vb):
        parts = []          # (holds, text)
        ha, hb = va["held"], vb["held"]
        if "fifo" in ha and "fifo" in hb:
            parts.append((ha["fifo"] > hb["fifo"], f"both under fifo: held up to {ha['fifo']:,} against "
                                                   f"{hb['fifo']:,} masses"))
        if "fifo" in hb and "other" in hb:
            parts.append((hb["fifo"] <= hb["other"], f"mainline under fifo {hb['fifo']:,}, under other "
                                                     f"{hb['other']:,} masses"))
        got = _faster(va["fast"], vb["fast"], "other")
        if got is not None:
            parts.append((got[0] * 2 > got[1], f"both under other: mainline faster real-fast in {got[0]} of "
                                               f"{got[1]} configurations"))
        if not parts:
            return None, "the two runs share no tire sweep under one policy"
        missing = 3 - len(parts)
        text = "; ".join(t for _, t in parts) + (f" ({missing} of 3 parts not measured)" if missing else "")
        return (HOLDS if all(ok for ok, _ in parts) else FAILS), text
    return _across(runs, _tire_both, pair,
                   "needs tire sweeps with both policies on a PREEMPT_RT and a mainline kernel")


PER_RUN = ((AVG_TENTH, _avg_tenth), (LOADED_WORSE, _loaded_worse), (STRESSED_WORSE, _stressed_worse),
           (RT_AVERAGE_20, _rt_average_20), (RT_NOT_50, _rt_not_50), (RT_ABOVE_100_STRESSED, _rt_above_100_stressed),
           (MAINLINE_ABOVE_1MS, _mainline_above_1ms))
CROSS = ((RT_BELOW_MAINLINE, _rt_below_mainline), (SUITE_MULTIPLE, _suite_multiple),
         (GPOS_FASTER, _gpos_faster), (RTOS_HOLDS_MORE, _rtos_holds_more), (POLICY_NOT_CAUSE, _policy_not_cause))
# the order the studies' checks are listed in
ORDER = [c.key for c, _ in PER_RUN + CROSS]


def check_conclusions(runs: list[Run], sources: set[str] | None = None) -> list[Check]:
    """Every study's conclusions checked on runs (all of them: per run, and across every
    pair of a real-time and a general-purpose run); sources limits them to those studies
    (the report passes the studies its runs reproduce)."""
    out = []
    for conclusion, one in PER_RUN:
        if sources is None or conclusion.source in sources:
            status, detail, reason, per = _per_run(runs, one)
            out.append(Check(conclusion, status, detail, per, reason))
    for conclusion, across in CROSS:
        if sources is None or conclusion.source in sources:
            status, detail, reason, pairs = across(runs)
            out.append(Check(conclusion, status, detail, {}, reason, pairs))
    return out


def summary_line(checks: list[Check]) -> str:
    """'conclusions: 2 hold, 1 does not hold, 4 not decidable'."""
    counts = {s: sum(c.status == s for c in checks) for s in (HOLDS, FAILS, UNDECIDED)}
    return (f"conclusions: {counts[HOLDS]} hold, {counts[FAILS]} {'do' if counts[FAILS] != 1 else 'does'} not hold, "
            f"{counts[UNDECIDED]} not decidable")
