"""The published studies' stated conclusions, checked on the measured runs.

Each study ends with findings about the systems it measured (docs/studies.md,
"Conclusions checked"). Here each finding is a check evaluated on the runs of a report:
per run where one system's data decide it ("the averages are about an order of
magnitude below the maxima"), across runs where it compares systems ("the real-time
kernel's worst case is below the general-purpose one's"). A check reads:

- "holds" / "does not hold", with the figures that decided it;
- "not measured": the runs lack the measurement it needs (run the study's profile);
- "needs a second system": it compares systems and the runs do not hold both kinds.

A system measured under full-system emulation or in a virtual machine is not a fair
witness of a cross-system conclusion about timing: such a comparison is marked rather
than drawn (`emulated`)."""

from __future__ import annotations

from dataclasses import dataclass

from rtgauge.records import Run
from rtgauge.analysis.tire import headline_limits, realfast_curves, tire_points

HOLDS, FAILS, NOT_MEASURED, NEEDS_SECOND, EMULATED = (
    "holds", "does not hold", "not measured", "needs a second system", "emulated")

# "about an order of magnitude": the average at most this share of the maximum
ORDER_OF_MAGNITUDE = 0.2
# "much worse": the loaded maximum at least this many times the idle one
MUCH_WORSE = 2.0
# "multiple times larger": the median ratio of the worst cases at least this
MULTIPLE_TIMES = 2.0
NOT_HARDWARE = "a system here is emulated or virtualised: its timing says nothing about hardware"


@dataclass(frozen=True)
class Conclusion:
    source: str          # the study (published.csv's source)
    key: str             # a stable name for scripts
    claim: str           # the finding, in our words
    where: str           # where the publication states it


@dataclass
class Check:
    conclusion: Conclusion
    status: str
    detail: str
    per_run: dict        # run id -> {"status", "detail"} for per-run checks; {} for cross-system ones

    def to_json(self) -> dict:
        return {"source": self.conclusion.source, "key": self.conclusion.key, "claim": self.conclusion.claim,
                "where": self.conclusion.where, "status": self.status, "detail": self.detail,
                "runs": {str(k): v for k, v in self.per_run.items()}}


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


def _emulated(run: Run) -> bool:
    s = run.system or {}
    virt = s.get("virtualisation") or s.get("virtualization") or s.get("hypervisor")
    return bool(s.get("emulated")) or bool(virt and str(virt).lower() not in ("none", "no", "false"))


def _per_run(runs: list[Run], one) -> tuple[str, str, dict]:
    """Evaluate one(run) -> (status, detail) per run; the check holds when every
    deciding run holds, fails when one fails."""
    per = {}
    for r in runs:
        status, detail = one(r)
        per[r.id] = {"status": status, "detail": detail}
    decided = [v for v in per.values() if v["status"] in (HOLDS, FAILS)]
    if not decided:
        return NOT_MEASURED, next((v["detail"] for v in per.values() if v["detail"]), ""), per
    if any(v["status"] == FAILS for v in decided):
        return FAILS, f"{sum(v['status'] == FAILS for v in decided)} of {len(decided)} runs", per
    return HOLDS, f"{len(decided)} of {len(decided)} runs", per


# ---- the interrupt study ------------------------------------------------------

AVG_TENTH = Conclusion("rtlinux-rtems-2000", "averages-tenth-of-maxima",
                       "the average latencies are about an order of magnitude below the maxima",
                       "section 3.2, after Table 1")
LOADED_WORSE = Conclusion("rtlinux-rtems-2000", "loaded-worse-than-idle",
                          "under the network load the worst case is much worse than idle (RTLinux: 13.5 → 196.8 µs)",
                          "Table 1")


def _avg_tenth(run: Run) -> tuple[str, str]:
    figures = []
    for cond in ("idle", "ping-tcp"):
        for metric in ("ti_irq", "ti_sched"):
            d = _latency(run, metric, cond)
            if d is not None and d.max > 0:
                figures.append((cond, metric, d.avg / d.max))
    if not figures:
        return NOT_MEASURED, "no split wake-up (latency --split) in this run"
    worst = max(figures, key=lambda f: f[2])
    status = HOLDS if worst[2] <= ORDER_OF_MAGNITUDE else FAILS
    return status, f"largest avg/max {worst[2]:.2f} ({worst[1]}, {worst[0]}; holds at ≤ {ORDER_OF_MAGNITUDE})"


def _loaded_worse(run: Run) -> tuple[str, str]:
    for metric in ("ti_irq", "ti"):
        idle, loaded = _latency(run, metric, "idle"), _latency(run, metric, "ping-tcp")
        if idle is not None and loaded is not None and idle.max > 0:
            ratio = loaded.max / idle.max
            return (HOLDS if ratio >= MUCH_WORSE else FAILS,
                    f"{metric} max {loaded.max / 1000:,.1f} µs loaded against {idle.max / 1000:,.1f} µs idle "
                    f"(×{ratio:.2f}; holds at ×{MUCH_WORSE:g} or more)")
    return NOT_MEASURED, "needs the wake-up latency idle and under ping-tcp"


# ---- the cyclictest study -----------------------------------------------------

STRESSED_WORSE = Conclusion("xenomai3-arm-2016", "stressed-average-worse",
                            "the CPU stressor raises the average wake-up latency (Xenomai: about 9 → 18 µs)",
                            "section 2.3")
RT_BELOW_MAINLINE = Conclusion("xenomai3-arm-2016", "rt-below-mainline",
                               "PREEMPT_RT's worst case is far below mainline's (mainline's easily exceeds 1 ms)",
                               "section 2.3")


def _stressed_worse(run: Run) -> tuple[str, str]:
    idle, cpu = _latency(run, "ti", "idle"), _latency(run, "ti", "cpu")
    if idle is None or cpu is None:
        return NOT_MEASURED, "needs the wake-up latency idle and under cpu"
    status = HOLDS if cpu.avg > idle.avg else FAILS
    return status, f"average {cpu.avg / 1000:,.1f} µs under cpu against {idle.avg / 1000:,.1f} µs idle"


def _worst(run: Run) -> float | None:
    maxima = [d.max for c in ("idle", "cpu") if (d := _latency(run, "ti", c)) is not None]
    return max(maxima) if maxima else None


def _rt_below_mainline(runs: list[Run]) -> tuple[str, str]:
    rt = [(r, w) for r in runs if _is_realtime(r) and (w := _worst(r)) is not None]
    gp = [(r, w) for r in runs if _is_realtime(r) is False and (w := _worst(r)) is not None]
    if not rt or not gp:
        return NEEDS_SECOND, "needs a PREEMPT_RT run and a mainline run of the wake-up latency"
    if any(_emulated(r) for r, _ in rt + gp):
        return EMULATED, NOT_HARDWARE
    (r1, w1), (r2, w2) = max(rt, key=lambda x: x[1]), min(gp, key=lambda x: x[1])
    status = HOLDS if w1 < w2 else FAILS
    return status, (f"worst PREEMPT_RT run {r1.id}: {w1 / 1000:,.1f} µs; best mainline run {r2.id}: "
                    f"{w2 / 1000:,.1f} µs")


# ---- the evaluation suite -----------------------------------------------------

SUITE_MULTIPLE = Conclusion("qnx65-vs-linux-rt-2012", "worst-case-multiple-times",
                            "the worst cases of one system are typically several times the other's "
                            "(Linux-rt against QNX: about ×6 in the sustained interrupt test)",
                            "section 5")
SUITE_TESTS = ("switch", "sem", "mutex", "thread", "tick")


def _suite_max(run: Run) -> dict:
    out = {}
    for m in run.measurements:
        if m.test in SUITE_TESTS and m.tool == "engine" and m.ok:
            for name, d in m.metrics.items():
                if d.count and d.max:
                    out.setdefault((m.test, name, str(sorted(m.params.items()))), d.max)
    return out


def _suite_multiple(runs: list[Run]) -> tuple[str, str]:
    measured = [(r, _suite_max(r)) for r in runs]
    measured = [(r, x) for r, x in measured if x]
    if len(measured) < 2:
        return NEEDS_SECOND, "needs the evaluation suite on two systems"
    if any(_emulated(r) for r, _ in measured):
        return EMULATED, NOT_HARDWARE
    (ra, a), (rb, b) = measured[0], measured[1]
    common = sorted(set(a) & set(b))
    if not common:
        return NOT_MEASURED, "the two runs share no test of the suite"
    ratios = sorted(max(a[k], b[k]) / max(min(a[k], b[k]), 1e-9) for k in common)
    median = ratios[len(ratios) // 2]
    better = ra if sum(a[k] < b[k] for k in common) * 2 >= len(common) else rb
    status = HOLDS if median >= MULTIPLE_TIMES else FAILS
    return status, (f"median ratio of the worst cases ×{median:.1f} over {len(common)} figures (run {better.id} "
                    f"the better; holds at ×{MULTIPLE_TIMES:g} or more)")


# ---- the tire study -----------------------------------------------------------

GPOS_FASTER = Conclusion("rtos-vs-gpos-tire-2015", "gpos-faster-realfast",
                         "the general-purpose system finishes the real-fast runs sooner", "section 5")
RTOS_HOLDS_MORE = Conclusion("rtos-vs-gpos-tire-2015", "rtos-better-realtime",
                             "the real-time system holds hard real time up to larger tires", "section 5")


def _realfast_total(run: Run) -> dict:
    out = {}
    for (solver, policy), curves in realfast_curves(tire_points(run)).items():
        for threads, pts in curves.items():
            for masses, wall in pts:
                out[(solver, policy, threads, masses)] = wall
    return out


def _largest_held(run: Run) -> int | None:
    held = [x["max_masses"] for x in headline_limits(run) if x.get("max_masses") and x["period_ms"] == 10.0]
    return max(held) if held else None


def _rt_and_gp(runs: list[Run], value, needs: str) -> tuple[tuple | None, tuple[str, str] | None]:
    """((real-time run, its value), (general-purpose run, its value)): the first run of
    each kind with a value, and None; or None and the (status, detail) that decides a
    cross-system check without them (a kind missing: NEEDS; one emulated)."""
    rt = [(r, v) for r in runs if _is_realtime(r) and (v := value(r))]
    gp = [(r, v) for r in runs if _is_realtime(r) is False and (v := value(r))]
    if not rt or not gp:
        return None, (NEEDS_SECOND, needs)
    if _emulated(rt[0][0]) or _emulated(gp[0][0]):
        return None, (EMULATED, NOT_HARDWARE)
    return (rt[0], gp[0]), None


def _gpos_faster(runs: list[Run]) -> tuple[str, str]:
    pair, undecided = _rt_and_gp(runs, _realfast_total,
                                 "needs tire real-fast runs on a real-time and a general-purpose kernel")
    if pair is None:
        return undecided
    (rr, a), (gr, b) = pair
    common = sorted(set(a) & set(b))
    if not common:
        return NOT_MEASURED, "the two runs share no real-fast configuration"
    faster = sum(b[k] < a[k] for k in common)
    status = HOLDS if faster * 2 > len(common) else FAILS
    return status, f"the general-purpose run {gr.id} faster in {faster} of {len(common)} configurations"


def _rtos_holds_more(runs: list[Run]) -> tuple[str, str]:
    pair, undecided = _rt_and_gp(runs, _largest_held, "needs tire sweeps on a real-time and a general-purpose kernel")
    if pair is None:
        return undecided
    (rr, a), (gr, b) = pair
    return (HOLDS if a > b else FAILS), f"held up to {a:,} masses (run {rr.id}) against {b:,} (run {gr.id}) at 100 Hz"


PER_RUN = ((AVG_TENTH, _avg_tenth), (LOADED_WORSE, _loaded_worse), (STRESSED_WORSE, _stressed_worse))
CROSS = ((RT_BELOW_MAINLINE, _rt_below_mainline), (SUITE_MULTIPLE, _suite_multiple),
         (GPOS_FASTER, _gpos_faster), (RTOS_HOLDS_MORE, _rtos_holds_more))


def check_conclusions(runs: list[Run], sources: set[str] | None = None) -> list[Check]:
    """Every study's conclusions checked on runs; sources limits them to those studies
    (the report passes the studies its runs reproduce)."""
    out = []
    for conclusion, one in PER_RUN:
        if sources is None or conclusion.source in sources:
            status, detail, per = _per_run(runs, one)
            out.append(Check(conclusion, status, detail, per))
    for conclusion, across in CROSS:
        if sources is None or conclusion.source in sources:
            status, detail = across(runs)
            out.append(Check(conclusion, status, detail, {}))
    return out
