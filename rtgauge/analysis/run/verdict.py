"""The verdict against a job: can this system carry a job whose wake-ups must come
within a latency budget (optionally at a period, with an allowed miss rate)?

The answer is "yes", "no" or "undecided" (not enough evidence), with the margin and
the evidence (docs/verdict.md):

- per latency job of the run (ours and the cyclictest cross-check, every condition),
  the periods not served within the budget — wake-ups later than the budget, counted
  from the stored histogram, and deadlines skipped after a late wake-up (no wake-up
  happened for them) — out of the job's periods (wake-ups + skipped), with the exact (Clopper-Pearson) one-sided 95 % bounds on the
  exceedance rate at that run length;
- with an allowed miss rate r: a job is "yes" when the upper bound is ≤ r, "no" when
  the lower bound is > r, else undecided, with the cycles still needed to decide
  if the observed rate holds;
- without one (a hard budget: no wake-up may be late): one observed exceedance is
  "no"; none is "yes" only when the credible worst case (docs/pwcet.md) has its whole
  95 % interval within the budget, "no" when it is wholly above, else undecided —
  observation alone never shows "never".
The run's verdict is "no" if any job says no, "yes" if every job says yes, else
undecided. Its exit status: 0 yes, 3 no, 4 undecided, 5 when the run is incomplete
(a gate fails closed) — rtgauge/errors.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy.stats import beta

from rtgauge.analysis.pwcet import DEFAULT_EXCEEDANCE, duration_text, worst_case as pwcet_worst_case
from rtgauge.analysis.run.rows import late_periods, latency_measurements
from rtgauge.analysis.run.starved import starved_hint
from rtgauge.records import Measurement, Run
from rtgauge.errors import EXIT_GATE_TRIPPED, EXIT_INCOMPLETE, EXIT_OK, EXIT_UNDECIDED, UserError

CONFIDENCE = 0.95          # one-sided, for the exceedance-rate bounds
YES, NO, UNDECIDED = "yes", "no", "undecided"
MAX_LATENCY_US = 1e7


@dataclass(frozen=True)
class Budget:
    """The job: wake-up latency allowed (µs), its period (µs) and the share of cycles
    allowed to be later than the budget (None: none, a hard budget)."""
    latency_us: float
    period_us: float | None = None
    miss_rate: float | None = None
    source: str = "command line"

    @property
    def hard(self) -> bool:
        return not self.miss_rate

    def text(self) -> str:
        out = f"wake-up latency ≤ {self.latency_us:,.6g} µs"
        if self.period_us:
            out += f" every {self.period_us:,.6g} µs"
        out += f", at most {self.miss_rate:.3g} of cycles late" if self.miss_rate else ", never late (hard)"
        return out

    def to_json(self) -> dict:
        return {"latency_us": self.latency_us, "period_us": self.period_us, "miss_rate": self.miss_rate,
                "source": self.source}


def make_budget(latency_us, period_us=None, miss_rate=None, source: str = "command line") -> Budget | None:
    """A checked budget, or None when no latency is given; bad values are one sentence."""
    if latency_us is None:
        if period_us is not None or miss_rate is not None:
            raise UserError(f"a period or a miss rate needs the budget's latency ({source}); give "
                            "--budget-us (or latency_us in the [budget] table) too.")
        return None
    if any(isinstance(v, bool) for v in (latency_us, period_us, miss_rate)):
        raise UserError(f"the budget ({source}) must be numbers, not true/false: latency and period in µs, "
                        "the miss rate a fraction such as 1e-6.")
    try:
        latency_us = float(latency_us)
        period_us = None if period_us is None else float(period_us)
        miss_rate = None if miss_rate is None else float(miss_rate)
    except (TypeError, ValueError):
        raise UserError(f"the budget ({source}) must be numbers: latency and period in µs, the miss rate "
                        "a fraction such as 1e-6.") from None
    if not (math.isfinite(latency_us) and 1 <= latency_us <= MAX_LATENCY_US):
        raise UserError(f"budget latency {latency_us:g} µs ({source}) is out of range 1..10000000; give the "
                        "worst-case wake-up latency your job tolerates, in µs.")
    if period_us is not None:
        if not (math.isfinite(period_us) and 1 <= period_us <= MAX_LATENCY_US):
            raise UserError(f"budget period {period_us:g} µs ({source}) is out of range 1..10000000; give "
                            "your job's period in µs.")
        if latency_us > period_us:
            raise UserError(f"budget latency {latency_us:g} µs is longer than its period {period_us:g} µs "
                            f"({source}); a wake-up that late misses the next period: give a latency ≤ the period.")
    if miss_rate is not None and not (math.isfinite(miss_rate) and 0 <= miss_rate < 1):
        raise UserError(f"budget miss rate {miss_rate:g} ({source}) is not a fraction of cycles; give one "
                        "from 0 (hard: never late) to below 1, e.g. 1e-6.")
    return Budget(latency_us, period_us, miss_rate or None, source)


# ---- exact binomial bounds ------------------------------------------------------

def rate_bounds(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (lower, upper) on a rate from k of n."""
    alpha = 1 - confidence
    lower = 0.0 if k <= 0 else float(beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k >= n else float(beta.ppf(1 - alpha, k + 1, n - k))
    return lower, upper


def cycles_needed(k: int, n: int, rate: float, confidence: float = CONFIDENCE) -> int | None:
    """Cycles a run needs in all for the upper bound to fall to `rate` if the observed
    rate k/n holds (None: it never will, the observed rate is not below `rate`)."""
    observed = k / n if n else 0.0
    if observed >= rate:
        return None

    def ok(total: int) -> bool:
        return rate_bounds(round(observed * total), total, confidence)[1] <= rate

    lo, hi = max(n, 1), max(n, 1)
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > 1e15:
            return None
    while hi - lo > max(1, lo // 1000):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


# ---- counting ----------------------------------------------------------------------

def exceedances(m: Measurement, limit_ns: float) -> tuple[int, bool]:
    """Samples of Ti above limit_ns from the stored histogram, and whether the count is
    exact (False: a bin straddles the limit and is counted whole, an upper count)."""
    ti = m.metric("ti")
    if ti.max is not None and ti.max <= limit_ns:
        return 0, True
    bins = ti.bins or (ti.linear or {}).get("bins") or []
    if not bins:        # no histogram: only the maximum is known
        return (1 if ti.max is not None and ti.max > limit_ns else 0), False
    k, exact = 0, True
    for lo, hi, c in bins:
        if lo > limit_ns:
            k += int(c)
        elif hi > limit_ns and c:
            k += int(c)
            exact = False
    below = sum(int(c) for lo, hi, c in bins)
    if ti.count and below < ti.count and ti.max is not None and ti.max > limit_ns:
        k += int(ti.count - below)     # samples beyond the histogram's range
    return k, exact


def worst_case(m: Measurement) -> dict:
    """The credible worst case of a measurement, from the pWCET's one answer
    (analysis/pwcet.py: worst_case, all threads together):
    {"credible": bool, "level_us", "low_us", "high_us", "why", "code"}."""
    if m.tool != "engine":
        return {"credible": False, "why": "a cross-check stores no per-window maxima"}
    try:
        r = pwcet_worst_case(m)
    except Exception as e:      # a fit that cannot be made is a refusal, not a crash
        return {"credible": False, "why": f"the fit failed ({type(e).__name__})"}
    if r is None:
        return {"credible": False, "why": "no per-window maxima stored"}
    if not r.applicable:
        return {"credible": False, "why": r.reason, "code": getattr(r, "code", None)}
    return {"credible": True, "level_us": r.level_ns / 1000, "low_us": r.ci_low_ns / 1000,
            "high_us": None if r.ci_high_ns is None else r.ci_high_ns / 1000,
            "exceedance": r.exceedance, "summary": r.summary()}


# ---- the verdict -------------------------------------------------------------------

@dataclass
class JobVerdict:
    name: str
    tool: str
    condition: str
    cycles: int
    exceedances: int
    exact: bool
    max_us: float | None
    rate_low: float
    rate_high: float
    answer: str
    why: str
    needed_cycles: int | None = None
    interval_us: float | None = None
    worst_case: dict | None = None
    wakeups: int | None = None       # of the cycles (periods): those measured
    skipped: int | None = None       # of the cycles: deadlines skipped (None: the tool does not count them)

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Verdict:
    budget: Budget
    answer: str
    margin_us: float | None          # budget - worst observed (negative: over)
    worst_us: float | None
    jobs: list[JobVerdict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        if self.incomplete:
            return EXIT_INCOMPLETE
        return {YES: EXIT_OK, NO: EXIT_GATE_TRIPPED}.get(self.answer, EXIT_UNDECIDED)

    @property
    def headline(self) -> str:
        word = {YES: "yes", NO: "no", UNDECIDED: "not enough evidence"}[self.answer]
        margin = "" if self.margin_us is None else (
            f"; margin {self.margin_us:+,.1f} µs ({self.margin_us / self.budget.latency_us:+.0%} of the budget)")
        return f"{word} — {self.budget.text()}{margin}"

    def to_json(self) -> dict:
        return {"answer": self.answer, "headline": self.headline, "budget": self.budget.to_json(),
                "margin_us": self.margin_us, "worst_us": self.worst_us, "confidence": CONFIDENCE,
                "reasons": self.reasons, "incomplete": self.incomplete,
                "exit_status": self.exit_status, "jobs": [j.to_json() for j in self.jobs]}


def _cycles_text(n: int, interval_us: float | None) -> str:
    text = f"{n:,} cycles"
    if interval_us:
        text += f" ({duration_text(n * interval_us * 1e-6)} at {interval_us:g} µs)"
    return text


def pooled_worst_case(ms: list[Measurement]) -> dict:
    """The credible worst case over a job's rounds: credible only when every round's is,
    its level and bounds the largest of the rounds'."""
    cases = [worst_case(m) for m in ms]
    bad = next((c for c in cases if not c["credible"]), None)
    if bad is not None:
        return bad
    highs = [c.get("high_us") for c in cases]
    return {"credible": True, "level_us": max(c["level_us"] for c in cases),
            "low_us": max(c["low_us"] for c in cases),
            "high_us": None if any(h is None for h in highs) else max(highs),
            "summary": "; ".join(c["summary"] for c in cases)}


def judge_job(ms: list[Measurement], budget: Budget, name: str | None = None) -> JobVerdict:
    """One job (all its rounds pooled: cycles and exceedances add up)."""
    m = ms[0]
    n = k = woken = 0
    skipped: int | None = 0
    exact = True
    for one in ms:
        kk, ex = exceedances(one, budget.latency_us * 1000)
        late = late_periods(one)
        nn = max(late["wakeups"] or 0, kk)
        ss = late["skipped"]
        # a skipped deadline is a period not served on time (no wake-up happened for it)
        n, k, woken, exact = n + nn + (ss or 0), k + kk + (ss or 0), woken + nn, exact and ex
        skipped = None if skipped is None or ss is None else skipped + ss
    n = max(n, 1)
    low, high = rate_bounds(k, n)
    interval = m.period_us
    maxima = [one.metric("ti").max for one in ms if one.metric("ti").max is not None]
    max_us = max(maxima) / 1000 if maxima else None
    jv = JobVerdict(name or m.name, m.tool, m.condition, n, k, exact, max_us, low, high, UNDECIDED, "",
                    interval_us=interval, wakeups=woken, skipped=skipped)
    if skipped is None:
        of = f"{n:,} wake-ups ({m.tool} does not count the deadlines it skipped)"
    else:
        of = f"{n:,} periods ({woken:,} wake-ups, {skipped:,} skipped)"
    counted = (f"{'' if exact else 'at most '}{k:,} of {of} later than {budget.latency_us:,.6g} µs"
               + (" or skipped" if skipped else ""))
    bounds = f"rate {low:.2g}–{high:.2g} (exact binomial, one-sided {CONFIDENCE:.0%})"
    if not budget.hard:
        r = budget.miss_rate
        if high <= r:
            jv.answer, jv.why = YES, f"{counted}: {bounds}, within the allowed {r:.3g}"
        elif low > r:
            jv.answer, jv.why = NO, f"{counted}: {bounds}, above the allowed {r:.3g}"
        else:
            jv.needed_cycles = cycles_needed(k, n, r)
            more = ("the observed rate is not below the allowed one; a longer run may show it is above"
                    if jv.needed_cycles is None else
                    f"deciding it needs about {_cycles_text(jv.needed_cycles, interval)} if this rate holds")
            jv.answer, jv.why = UNDECIDED, f"{counted}: {bounds} includes the allowed {r:.3g}; {more}"
        return jv
    if k > 0:
        jv.answer, jv.why = NO, f"{counted}: a hard budget allows none"
        return jv
    jv.worst_case = wc = pooled_worst_case(ms)
    if wc["credible"] and wc.get("high_us") is not None and wc["high_us"] <= budget.latency_us:
        jv.answer = YES
        jv.why = (f"{counted}; the credible worst case {wc['level_us']:,.1f} µs (95 % interval up to "
                  f"{wc['high_us']:,.1f} µs) is within the budget")
        return jv
    if wc["credible"] and wc["low_us"] > budget.latency_us:
        jv.answer = NO
        jv.why = (f"{counted}, but the credible worst case {wc['level_us']:,.1f} µs (95 % interval from "
                  f"{wc['low_us']:,.1f} µs) is above the budget")
        return jv
    jv.needed_cycles = cycles_needed(0, n, DEFAULT_EXCEEDANCE)
    why_wc = (f"the credible worst case's interval ({wc['low_us']:,.1f}–"
              f"{'unbounded' if wc.get('high_us') is None else format(wc['high_us'], ',.1f')} µs) straddles the "
              "budget" if wc["credible"] else f"there is no credible worst case ({wc['why']})")
    jv.why = (f"{counted} ({bounds}); {why_wc}; observation alone would need about "
              f"{_cycles_text(jv.needed_cycles, interval)} without an exceedance to bound the rate at "
              f"{DEFAULT_EXCEEDANCE:g}")
    return jv


def judge(run: Run, budget: Budget) -> Verdict:
    ms = [m for m in latency_measurements(run) if m.ok]
    groups: dict[str, list[Measurement]] = {}
    for m in ms:
        groups.setdefault(m.pooled_name, []).append(m)
    jobs = [judge_job(group, budget, name) for name, group in groups.items()]
    incomplete = []
    if run.status not in ("complete", "running"):
        incomplete.append(f"run {run.id} is {run.status}")
    failed = [m.label for m in run.measurements if not m.ok]
    if failed:
        incomplete.append("failed job(s): " + ", ".join(failed[:5]))
    interrupted = [m.label for m in ms if m.interrupted]
    if interrupted:
        incomplete.append("interrupted job(s): " + ", ".join(interrupted[:5]))
    cut = [f"{m.label} ({m.stopped_early})" for m in ms if m.stopped_early and not m.interrupted]
    if cut:
        incomplete.append("job(s) stopped early: " + ", ".join(cut[:5]))
    maxima = [j.max_us for j in jobs if j.max_us is not None]
    worst = max(maxima) if maxima else None
    margin = None if worst is None else budget.latency_us - worst
    reasons = []
    if not jobs:
        return Verdict(budget, UNDECIDED, None, None, [], ["the run has no wake-up latency measurement"],
                       incomplete)
    answers = {j.answer for j in jobs}
    answer = NO if NO in answers else (YES if answers == {YES} else UNDECIDED)
    for j in jobs:
        if j.answer == answer or answer == UNDECIDED and j.answer != YES:
            reasons.append(f"{j.name}: {j.why}")
    if budget.period_us:
        other = sorted({j.interval_us for j in jobs if j.interval_us and abs(j.interval_us - budget.period_us) > 1e-9})
        if other:
            reasons.append(f"measured at an interval of {', '.join(f'{i:g}' for i in other)} µs, not the job's "
                           f"period {budget.period_us:g} µs: the rates are per measured cycle")
    if not any(j.condition != "idle" for j in jobs):
        reasons.append("measured idle only: a job that runs beside other work needs a loaded condition too")
    for group in groups.values():       # a starved job: what to look at, not only "no" (docs/verdict.md)
        hint = next((t for t in (starved_hint(m, run.system) for m in group) if t), None)
        if hint:
            reasons.append(hint)
    return Verdict(budget, answer, margin, worst, jobs, reasons, incomplete)
