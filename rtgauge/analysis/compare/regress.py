"""Regressions between runs: every comparable figure of a baseline run and a
candidate, each with its uncertainty, and whether it is significantly better or worse.

A figure is gathered over the rounds of its job (`rounds = N`: independent engine
invocations, stored as separate measurements tagged load.round); the statistics are in
rtgauge/analysis/compare/noise.py and docs/compare.md. Verdicts:

- worse / better: the difference is significant after the Benjamini-Hochberg adjustment
  over all tested figures of the comparison (false discovery rate alpha, default 5 %);
- no significant difference: it is not, or the figure has no interval (a single value
  without within-run uncertainty, e.g. one wall time); a single round on each side is
  never called on within-run uncertainty alone (noise.compare_single adds the
  run-to-run drift), and a figure not called says what would decide it;
- new / gone: only in one run; invalid: a job failed or a value is not a number.

The one exception to "only when significant": the tire's largest hard-real-time n is the
outcome of a sweep over a fixed grid (not an estimate), and a step down is reported as
worse (method says so).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from rtgauge.analysis.run.rows import is_latency_measurement
from rtgauge.catalogue import MICRO_KINDS, catalogue
from rtgauge.analysis.compare import noise, windows as window_series
from rtgauge.defaults import REGRESSION_ALPHA
from rtgauge.analysis.studies.micro import is_micro, variant_of
from rtgauge.analysis.run.stalls import stall_free
from rtgauge.records import Measurement, Metric, Run, bounded_count
from rtgauge.analysis.run.tire import headline_limits, tire_points
from rtgauge.errors import UserError

ALPHA = REGRESSION_ALPHA
UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "": 1.0, "%": 1.0}

WORSE, BETTER, SAME = "worse", "better", "no significant difference"
NEW, GONE, INVALID = "new", "gone", "invalid"


@dataclass
class Figure:
    key: str          # stable id across runs
    family: str       # avg_latency, p99_latency, max_latency, misses, micro_avg, micro_p99, micro_max,
                      # avg_latency_stall_free, micro_avg_stall_free (without stall-touched samples),
                      # tire_max_masses, wall_time, timestamp_cost, verdict, failed_verdicts
    label: str
    value: float | None           # the run's figure: avg over all samples, mean round p99, true max, ...
    unit: str
    higher_is_worse: bool = True
    rounds: list[float] = field(default_factory=list)   # the compared value of each round
    within: noise.Within | None = None                 # a single round's own uncertainty
    events: tuple[float, float] | None = None          # (events, exposure) for rates
    failed: list[str] = field(default_factory=list)    # why rounds of its job failed
    exact: bool = False                                # compared without statistics (tire grid)
    steal_ms: list = field(default_factory=list)       # hypervisor steal on the measured CPUs, per round
    clock_step: float = 1.0                            # the clock's step behind its samples (noise.clock_step)
    windows: list[float] = field(default_factory=list)  # a single round's per-window maxima (latency max)
    per_window: dict | None = None      # a single round's per-window average and late periods (windows.py)

    @property
    def estimate(self) -> float | None:
        """What is compared: the mean over rounds (the value itself for one round)."""
        if self.rounds:
            return sum(self.rounds) / len(self.rounds)
        return None

    @property
    def invalid(self) -> str | None:
        if not self.rounds and self.events is None:
            return "; ".join(self.failed) if self.failed else "no valid value (missing or not a number)"
        return None


@dataclass
class Change:
    figure: Figure                 # the candidate's figure (the baseline's when gone)
    base: float | None             # compared estimate of the baseline
    value: float | None            # compared estimate of the candidate
    call: str                      # worse | better | no significant difference | new | gone | invalid
    why: str
    result: noise.Result | None = None
    q_value: float | None = None
    base_figure: Figure | None = None

    @property
    def relative(self) -> float | None:
        if self.base in (None, 0) or self.value is None:
            return None
        return (self.value - self.base) / abs(self.base)

    @property
    def significant(self) -> bool:
        return self.call in (WORSE, BETTER)


# ---- gathering figures over rounds ------------------------------------------------

def _dist_values(metric: Metric | None, key: str) -> float | None:
    if not isinstance(metric, Metric):
        return None
    v = getattr(metric, key)
    return float(v) if noise.is_valid(v) else None


def _bins(metric: Metric) -> list | None:
    """The metric's histogram bins [[lo, hi, count], ...] (or its linear ones)."""
    hist = metric.histogram if isinstance(metric.histogram, dict) else None
    bins = hist.get("bins") if hist else None
    if not bins:
        linear = metric.linear
        bins = linear.get("bins") if isinstance(linear, dict) else None
    return bins if isinstance(bins, list) and bins else None


def _within(metric: Metric, q: float | None = None) -> noise.Within:
    count, sd = metric.count, metric.stddev
    return noise.Within(int(count) if noise.is_valid(count) else None,
                        float(sd) if noise.is_valid(sd) else None, _bins(metric), q)


def _dist_figures(add, prefix: str, tag: str, label: str, families: tuple[str, str, str],
                  metrics: list[Metric], failed: list[str]) -> None:
    """avg, p99 and max of one distribution over its rounds."""
    avg_f, p99_f, max_f = families
    avgs = [v for v in (_dist_values(m, "avg") for m in metrics) if v is not None]
    p99s = [v for v in (_dist_values(m, "p99") for m in metrics) if v is not None]
    maxs = [v for v in (_dist_values(m, "max") for m in metrics) if v is not None]
    counts = [m.count or 0 for m in metrics if _dist_values(m, "avg") is not None]
    unit = next((m.unit for m in metrics if m.unit), "ns")
    pooled = (sum(a * c for a, c in zip(avgs, counts)) / sum(counts)) if avgs and sum(counts) else \
        (sum(avgs) / len(avgs) if avgs else None)
    single = metrics[0] if len(metrics) == 1 else None
    step = max((noise.clock_step(_bins(m)) for m in metrics), default=1.0)
    add(Figure(f"{prefix}:{tag}:avg", avg_f, f"{label} avg", pooled, unit, rounds=avgs,
               within=_within(single) if single else None, failed=list(failed), clock_step=step))
    add(Figure(f"{prefix}:{tag}:p99", p99_f, f"{label} p99", sum(p99s) / len(p99s) if p99s else None, unit,
               rounds=p99s, within=_within(single, 0.99) if single else None, failed=list(failed),
               clock_step=step))
    add(Figure(f"{prefix}:{tag}:max", max_f, f"{label} max", max(maxs) if maxs else None, unit, rounds=maxs,
               within=_within(single) if single else None, failed=list(failed), clock_step=step))


def _stall_free_figure(add, key: str, family: str, label: str, ms: list[Measurement], metric: str, unit: str,
                       failed: list[str]) -> None:
    """The average without the samples a detected host stall touched (docs/compare.md),
    when every round recorded the engine's host-stall observer."""
    clean = [stall_free(m, metric) for m in ms]
    if not clean or any(c is None or not noise.is_valid(c.get("avg")) for c in clean):
        return
    avgs = [float(c["avg"]) for c in clean]
    counts = [int(c.get("count") or 0) for c in clean]
    pooled = sum(a * n for a, n in zip(avgs, counts)) / sum(counts) if sum(counts) else sum(avgs) / len(avgs)
    single = Metric.from_dict(clean[0]) if len(clean) == 1 else None
    add(Figure(key, family, f"{label} avg without stall-touched samples", pooled, unit, rounds=avgs,
               within=_within(single) if single else None, failed=list(failed)))


def _grouped(measurements: list[Measurement], key) -> dict:
    groups: dict = {}
    for m in measurements:
        groups.setdefault(key(m), []).append(m)
    for ms in groups.values():
        ms.sort(key=lambda m: m.round or 0)
    return groups


def steal_ms(m: Measurement) -> float | None:
    steal = (m.env.get("counters") or {}).get("steal")
    v = steal.get("total_ms") if isinstance(steal, dict) else None
    return float(v) if noise.is_valid(v) else None


def window_maxima(m: Measurement) -> list[float]:
    """The per-window maxima of a latency measurement's ti (all threads), valid ones."""
    series = m.metrics.get("ti_window_max")
    values = series.series if isinstance(series, Metric) and series.series else []
    return [float(v) for v in values if noise.is_valid(v) and v > 0]


def failure_reason(m: Measurement) -> str:
    r = m.round
    where = f"round {r} of job {m.pooled_name}" if r else f"job {m.pooled_name}"
    if m.ok is not True:
        return f"{where} failed ({m.error or 'no result'})"
    return f"{where} has no valid figure"


def figures(run: Run) -> dict[str, Figure]:
    out: dict[str, Figure] = {}

    def add(f: Figure):
        out[f.key] = f

    ms = run.measurements
    # latency jobs (ours and the cyclictest cross-check), failed rounds included
    lat = [m for m in ms if is_latency_measurement(m)]
    for name, group in _grouped(lat, lambda m: m.pooled_name).items():
        good = [m for m in group if m.ok is True and _dist_values(m.metrics.get("ti"), "count")]
        failed = [failure_reason(m) for m in group if not any(m is g for g in good)]
        tis = [m.metrics["ti"] for m in good]
        _dist_figures(add, "lat", name, f"{name}", ("avg_latency", "p99_latency", "max_latency"), tis, failed)
        for suffix, fam in (("avg", "avg_latency"), ("p99", "p99_latency"), ("max", "max_latency")):
            f = out[f"lat:{name}:{suffix}"]
            f.label = f"{name} {suffix} latency"
            f.steal_ms = [steal_ms(m) for m in good]
        per_window = None
        if len(good) == 1:       # a single round's windows: its own batches (noise.batch_spread)
            out[f"lat:{name}:max"].windows = window_maxima(good[0])
            out[f"lat:{name}:p99"].windows = out[f"lat:{name}:max"].windows
            per_window = window_series.window_figures(good[0])
            out[f"lat:{name}:avg"].per_window = per_window
        _stall_free_figure(add, f"lat:{name}:avg_stall_free", "avg_latency_stall_free", f"{name} latency", good,
                           "ti", "ns", failed)
        # a deadline skipped after a late wake-up is a missed deadline (analysis.run.rows.late_periods)
        skipped = [bounded_count(m.scalar("skipped")) or 0 for m in good]
        misses = [m.scalar("misses") for m in good]
        cycles = [m.scalar("cycles") for m in good]
        if good and all(bounded_count(v) is not None for v in misses):   # counts, bounded (records.py)
            exposure = sum(c for c in cycles if noise.is_valid(c)) if all(noise.is_valid(c) for c in cycles) \
                else sum(m.metrics["ti"].count or 0 for m in good)
            exposure += sum(skipped)
            misses = [v + s for v, s in zip(misses, skipped)]
            label = f"{name} missed deadlines" + (f" ({sum(skipped):,} skipped)" if sum(skipped) else "")
            add(Figure(f"lat:{name}:misses", "misses", label, float(sum(misses)), "count",
                       rounds=[float(v) for v in misses], events=(float(sum(misses)), float(exposure or 1)),
                       failed=failed, per_window=per_window))
    # microbenchmarks: one figure set per (test, metric, variant, condition)
    micro_ms = [m for m in ms if m.tool == "engine" and catalogue().kind_of(m.test) in MICRO_KINDS]
    dists: dict[tuple, list[dict]] = {}
    micro_failed: dict[tuple, list[str]] = {}
    steals: dict[tuple, list] = {}
    owners: dict[tuple, list[Measurement]] = {}
    for m in sorted(micro_ms, key=lambda m: m.round or 0):
        if not is_micro(m):
            micro_failed.setdefault((m.test, variant_of(m.params), m.condition or ""), []).append(failure_reason(m))
            continue
        variant = variant_of(m.params)
        for mname, metric in m.metrics.items():
            if "#" in mname or not metric.is_distribution or not metric.count:
                continue
            key = (m.test, mname, variant, m.condition or "")
            dists.setdefault(key, []).append(metric)
            owners.setdefault(key, []).append(m)
            steals.setdefault(key, []).append(steal_ms(m))
    for (test, mname, variant, condition), metrics in sorted(dists.items()):
        name = test if mname in (test, "") else f"{test} {mname}"
        label = (f"{name} [{variant}]" if variant else name) + f" ({condition})"
        _dist_figures(add, "micro", label, label, ("micro_avg", "micro_p99", "micro_max"), metrics,
                      micro_failed.get((test, variant, condition), []))
        for suffix in ("avg", "p99", "max"):
            out[f"micro:{label}:{suffix}"].steal_ms = steals.get((test, mname, variant, condition), [])
        _stall_free_figure(add, f"micro:{label}:avg_stall_free", "micro_avg_stall_free", label,
                           owners.get((test, mname, variant, condition), []), mname,
                           out[f"micro:{label}:avg"].unit, micro_failed.get((test, variant, condition), []))
    for lim in headline_limits(run):
        tag = f"tire {lim['solver']} {lim['policy']} threads={lim['threads']}"
        add(Figure(f"tire:{tag}", "tire_max_masses", f"{tag}: largest n at 100 Hz, zero misses",
                   lim["max_masses"] or 0, "masses", higher_is_worse=False, rounds=[float(lim["max_masses"] or 0)],
                   exact=True))
    for p in tire_points(run):
        if p.mode == "realfast" and p.wall_s is not None:
            tag = f"tire real-fast {p.solver} {p.policy} threads={p.threads} n={p.masses}"
            add(Figure(f"wall:{tag}", "wall_time", f"{tag} wall time", p.wall_s, "s", rounds=[float(p.wall_s)]))
    stamps = [v for v in (m.scalar("timestamp_monotonic") for m in ms) if v is not None]
    if stamps:
        valid = [float(v) for v in stamps if noise.is_valid(v)]
        add(Figure("timestamp:monotonic", "timestamp_cost", "timestamp cost (CLOCK_MONOTONIC)",
                   sum(valid) / len(valid) if valid else None, "ns", rounds=valid))
    # behaviour verdicts: failing rounds of each verdict
    verdicts: dict[tuple, list[bool]] = {}
    for m in ms:
        for vname, v in m.verdicts.items():
            key = (m.test or m.name, vname, variant_of(m.params), m.condition or "")
            verdicts.setdefault(key, []).append(v.passed)
    failed_rows, failed_cells, cells = 0, 0, 0
    for (test, vname, variant, condition), passes in sorted(verdicts.items()):
        tag = f"{test} {vname}" + (f" [{variant}]" if variant else "")
        fails = sum(1 for p in passes if not p)
        failed_rows += fails > 0
        failed_cells += fails
        cells += len(passes)
        add(Figure(f"verdict:{tag}:{condition}", "verdict", f"verdict {tag} ({condition})",
                   float(fails > 0), "fail", rounds=[0.0 if p else 1.0 for p in passes],
                   events=(float(fails), float(len(passes)))))
    add(Figure("verdicts:failed", "failed_verdicts", "failed verdicts", float(failed_rows), "count",
               rounds=[float(failed_rows)], events=(float(failed_cells), float(max(cells, 1)))))
    return out


# ---- comparing ---------------------------------------------------------------------

def test_figure(fb: Figure, fa: Figure) -> noise.Result:
    """The statistics of one figure present in both runs."""
    a, b = fa.rounds, fb.rounds
    if fb.family in ("verdict", "failed_verdicts"):
        return noise.compare_proportions(int(fa.events[0]), int(fa.events[1]), int(fb.events[0]), int(fb.events[1]))
    if fb.family == "misses" and fa.events and fb.events:
        rates = noise.compare_rates(fa.events[0], fa.events[1], fb.events[0], fb.events[1])
        if len(a) <= 1 and len(b) <= 1:
            return single_round_rates(fa, fb, rates)
        return rates
    if len(a) >= 2 or len(b) >= 2:
        return noise.compare_rounds(a, b, max(fa.clock_step, fb.clock_step),
                                    extreme=fb.family in ("micro_max", "max_latency"))
    within = within_run(fb, fa)
    batched = single_round_batches(fb, fa, within)
    if batched is not None:
        return batched
    drift = noise.DRIFT.get(fb.family)
    if within is None or drift is None:
        return noise.Result("no interval: one value per run without its own uncertainty; run rounds "
                            "(rounds = N) to compare it", None, b[0] - a[0], note="no interval")
    se_a = se_b = 0.0
    if within.extra.get("se") is not None:
        se_a, se_b = within.extra["se"]
    elif within.base_interval and within.cand_interval:
        se_a = noise._log_se(a[0], within.base_interval, None)
        se_b = noise._log_se(b[0], within.cand_interval, None)
    r = noise.compare_single(a[0], b[0], drift, se_a, se_b, within, floor=max(fa.clock_step, fb.clock_step, 1.0),
                             df=noise.drift_df(fb.family))
    return without_batches(r, fa, fb, "averages")


def without_batches(r: noise.Result, fa: Figure, fb: Figure, what: str) -> noise.Result:
    """A drift-model result of a figure that has per-window batches when both runs hold
    them (an average, the missed deadlines): when one run holds them and the other does
    not (or too few), its method says so, so that the fallback is never silent. Runs
    of which neither holds them (runs stored before the engine wrote its window counts,
    imports of other tools) keep the drift model's own words, which name it
    (docs/compare.md)."""
    if fb.family not in ("avg_latency", "misses") or (fa.per_window is None and fb.per_window is None):
        return r
    lacking = [side for side, f in (("baseline", fa), ("candidate", fb)) if f.per_window is None]
    why = (f"the {' and the '.join(lacking)} holds no per-window {what}" if lacking else
           f"too few windows for {noise.MIN_BATCHES} batches")
    r.method = f"fallback to the drift model ({why}): " + r.method
    r.note = f"single round: drift model, {why}"
    r.extra["batches"] = None
    r.extra["no_batches"] = why
    return r


def single_round_batches(fb: Figure, fa: Figure, within: noise.Result | None) -> noise.Result | None:
    """A latency average, p99 or maximum of single rounds whose runs both hold enough
    windows: the noise between runs from each run's own batches (noise.batch_means of
    the per-window averages; noise.batch_spread of the window maxima), not the drift
    model. None otherwise (the drift model then, and for an average compare_single's
    method says which run lacks the per-window averages)."""
    if within is None:
        return None
    if fb.family == "avg_latency":
        ba, bb = (noise.batch_means(f.per_window["avg"], f.per_window["cycles"]) if f.per_window else None
                  for f in (fa, fb))
    elif fb.family in BATCHED:
        statistic = BATCHED[fb.family]
        ba, bb = noise.batch_spread(fa.windows, statistic), noise.batch_spread(fb.windows, statistic)
    else:
        return None
    if ba is None or bb is None:
        return None
    se_a = se_b = 0.0
    if within.base_interval and within.cand_interval:
        se_a = noise._log_se(fa.rounds[0], within.base_interval, None)
        se_b = noise._log_se(fb.rounds[0], within.cand_interval, None)
    return noise.compare_single_batches(fa.rounds[0], fb.rounds[0], ba, bb, se_a, se_b, within,
                                        floor=max(fa.clock_step, fb.clock_step, 1.0))


BATCHED = {"p99_latency": "p99", "max_latency": "max"}   # families whose runs hold batches (window maxima)


def within_run(fb: Figure, fa: Figure) -> noise.Result | None:
    """What a single round on each side says by itself (noise.py: the within-run tests;
    the per-window test for a latency maximum). Never a call on its own: compare_single
    adds the run-to-run drift."""
    wa, wb = fa.within, fb.within
    va, vb = fa.rounds[0], fb.rounds[0]
    if not (wa and wb):
        return None
    if fb.family in ("avg_latency", "micro_avg", "avg_latency_stall_free", "micro_avg_stall_free") and wa.count \
            and wb.count and wa.stddev is not None and wb.stddev is not None:
        r = noise.compare_means_within(va, wa.stddev, wa.count, vb, wb.stddev, wb.count)
        r.extra["se"] = [wa.stddev / math.sqrt(wa.count) / max(va, 1.0), wb.stddev / math.sqrt(wb.count) / max(vb, 1.0)]
        return r
    if fb.family in ("p99_latency", "micro_p99") and wa.bins and wb.bins:
        return noise.compare_quantile_within(wa, wb, va, vb)
    if fb.family == "max_latency" and len(fa.windows) >= 2 and len(fb.windows) >= 2:
        return noise.compare_windows(fa.windows, fb.windows, va, vb)
    if fb.family in ("max_latency", "micro_max") and wa.bins and wb.bins:
        return noise.compare_max_within(wa, wb, va, vb)
    return None


def single_round_rates(fa: Figure, fb: Figure, rates: noise.Result) -> noise.Result:
    """Missed deadlines of single rounds: the rate ratio against Poisson counting error
    plus, when both runs hold per-window late periods, each run's own between-batch
    spread of its rate (noise.batch_rates), else the run-to-run drift of the rate
    (noise.DRIFT["misses"]); half an event is added to each count so that
    none-against-some has a finite ratio."""
    (ka, na), (kb, nb) = fa.events, fb.events
    ra, rb = (ka + 0.5) / na, (kb + 0.5) / nb
    ba, bb = (noise.batch_rates(f.per_window["late"], f.per_window["periods"]) if f.per_window else None
              for f in (fa, fb))
    if ba is not None and bb is not None:
        r = noise.compare_single_batches(ra, rb, ba, bb, 1 / math.sqrt(ka + 0.5), 1 / math.sqrt(kb + 0.5), rates,
                                         floor=0.0 if min(ra, rb) > 0 else 1e-300)
    else:
        r = without_batches(noise.compare_single(ra, rb, noise.DRIFT["misses"], 1 / math.sqrt(ka + 0.5),
                                                 1 / math.sqrt(kb + 0.5), rates,
                                                 floor=0.0 if min(ra, rb) > 0 else 1e-300),
                            fa, fb, "late periods")
    r.difference, r.interval, r.noise_floor = rates.difference, None, None
    r.extra = {**rates.extra, **r.extra}
    return r


def exact_call(fb: Figure, fa: Figure) -> tuple[str, str]:
    a, b = fa.estimate, fb.estimate
    sign = 1 if fb.higher_is_worse else -1
    d = (b - a) * sign
    text = f"{a:,.0f} → {b:,.0f}"
    return (WORSE, text) if d > 0 else ((BETTER, text) if d < 0 else (SAME, "unchanged"))


def compare_runs(base: Run, cand: Run, alpha: float = ALPHA) -> list[Change]:
    fa, fb = figures(base), figures(cand)
    out: list[Change] = []
    tested: list[Change] = []
    for key, f in fb.items():
        if key not in fa:
            out.append(Change(f, None, f.estimate, NEW, "only in the candidate"))
            continue
        g = fa[key]
        if f.invalid or g.invalid:
            side = "candidate" if f.invalid else "baseline"
            out.append(Change(f, g.estimate, f.estimate, INVALID, f"{side}: {f.invalid or g.invalid}",
                              base_figure=g))
            continue
        if f.exact:
            call, why = exact_call(f, g)
            out.append(Change(f, g.estimate, f.estimate, call,
                              f"{why} (not a statistical test: a step on a fixed grid)",
                              noise.Result("exact: outcome of a sweep over a fixed grid"), base_figure=g))
            continue
        result = test_figure(f, g)
        c = Change(f, g.estimate, f.estimate, SAME, result.note or "", result, base_figure=g)
        if f.family == "misses":
            c.base, c.value = g.events[0], f.events[0]
        out.append(c)
        if result.p_value is not None and math.isfinite(result.p_value):
            tested.append(c)
    for c, q in zip(tested, noise.adjust([c.result.p_value for c in tested])):
        c.q_value = q
        d = c.result.difference or 0.0
        if q < alpha and d != 0:
            worse = (d > 0) == c.figure.higher_is_worse
            c.call = WORSE if worse else BETTER
            c.why = f"q = {q:.2g} < {alpha:g}" + (f"; {c.result.note}" if c.result.note else "")
        else:
            c.why = f"q = {q:.2g}" + (f"; {c.result.note}" if c.result.note else "")
            if c.result.extra.get("to_decide"):
                c.why += f"; {c.result.extra['to_decide']}"
    for key, f in fa.items():
        if key not in fb:
            out.append(Change(f, f.estimate, None, GONE, "only in the baseline", base_figure=f))
    return out


def change_json(c: Change) -> dict:
    """One compared figure for `compare --json`."""
    def num(v):
        return v if noise.is_valid(v) else None

    def pair(iv):
        return None if iv is None else [num(iv[0]), num(iv[1])]
    r = c.result
    base_f = c.base_figure
    rel = c.relative
    rel_iv = None
    if r and r.interval and c.base not in (None, 0):
        rel_iv = [num(r.interval[0] / abs(c.base)), num(r.interval[1] / abs(c.base))]
    return {
        "key": c.figure.key, "family": c.figure.family, "label": c.figure.label, "unit": c.figure.unit,
        "higher_is_worse": c.figure.higher_is_worse, "call": c.call,
        "verdict": c.call,   # the same, its name before version 2 of compare --json (docs/compare.md)
        "baseline": None if base_f is None else {
            "value": num(base_f.value), "estimate": num(c.base), "rounds": [num(v) for v in base_f.rounds],
            "interval": pair(r.base_interval) if r else None, "failed": base_f.failed,
            "steal_ms": base_f.steal_ms},
        "candidate": None if c.call == GONE else {
            "value": num(c.figure.value), "estimate": num(c.value), "rounds": [num(v) for v in c.figure.rounds],
            "interval": pair(r.cand_interval) if r else None, "failed": c.figure.failed,
            "steal_ms": c.figure.steal_ms},
        "difference": None if r is None else num(r.difference),
        "interval": None if r is None else pair(r.interval),
        "relative": num(rel), "relative_interval": rel_iv,
        "noise_floor": None if r is None else num(r.noise_floor),
        "p_value": None if r is None else num(r.p_value), "q_value": num(c.q_value),
        "method": None if r is None else r.method, "why": c.why,
        **({"detail": clean(r.extra)} if r and r.extra else {}),
    }


def clean(value):
    """JSON-safe: a number that is not finite becomes null."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---- --fail-on rules -------------------------------------------------------

FAMILIES = ("avg_latency", "p99_latency", "max_latency", "misses", "micro_avg", "micro_p99", "micro_max",
            "avg_latency_stall_free", "micro_avg_stall_free",
            "tire_max_masses", "wall_time", "timestamp_cost", "failed_verdicts", "verdict", "pwcet")
RULE = re.compile(r"^\s*([a-z_0-9]+)\s*([<>])\s*([+-]?)(\d+(?:\.\d+)?)\s*(%|ns|us|µs|ms|s)?\s*$")


@dataclass
class Rule:
    text: str
    family: str
    op: str
    signed: bool      # "+20%" / "-10%": a change from the baseline; "0": an absolute value
    amount: float
    unit: str

    def trips(self, c: Change) -> str | None:
        """A sentence when the rule trips on this figure. A change rule trips only on a
        significant change beyond its amount; an absolute rule on the candidate's value."""
        if c.figure.family != self.family or c.value is None:
            return None
        if not self.signed:
            v = c.value / (UNITS.get(self.unit, 1.0) if c.figure.unit == "ns" else 1.0)
            hit = v > self.amount if self.op == ">" else v < self.amount
            return f"{c.figure.label} = {self.shown(c.value, c.figure.unit)}" if hit else None
        if c.base is None or not c.significant:
            return None
        if self.unit == "%":
            if c.base == 0:
                change = math.inf if c.value > 0 else (-math.inf if c.value < 0 else 0.0)
            else:
                change = (c.value - c.base) / abs(c.base) * 100
        else:
            scale = UNITS.get(self.unit, 1.0) if c.figure.unit == "ns" else 1.0
            change = (c.value - c.base) / scale
        hit = change > self.amount if self.op == ">" else change < self.amount
        return (f"{c.figure.label}: {self.shown_pair(c)} ({change:+.1f}"
                f"{self.unit or ''}, significant: q = {c.q_value:.2g})" if c.q_value is not None else
                f"{c.figure.label}: {self.shown_pair(c)} ({change:+.1f}{self.unit or ''})") \
            if hit else None

    def shown(self, value: float, unit: str) -> str:
        """A figure in the rule's unit (a time in ns read as the rule writes it: `100us`
        gives µs; a % rule on a time gives µs), else in the figure's own unit."""
        if unit != "ns":
            return f"{value:,.6g} {unit}"
        written = self.unit if self.unit in ("ns", "us", "µs", "ms", "s") else "us"
        return f"{value / UNITS[written]:,.6g} {'µs' if written in ('us', 'µs') else written}"

    def shown_pair(self, c: Change) -> str:
        base, value = self.shown(c.base, c.figure.unit), self.shown(c.value, c.figure.unit)
        return f"{base.rsplit(' ', 1)[0]} → {value}"

    def undecided(self, c: Change) -> str | None:
        """A sentence when the evidence cannot decide this change rule on this figure:
        the change's point estimate lies beyond the rule's amount but is not
        significant (single rounds carry the run-to-run drift, docs/compare.md). What
        would decide is said. A change within the amount passes, as before."""
        if not self.signed or c.figure.family != self.family or c.significant or c.call != SAME:
            return None
        if c.base is None or c.value is None or c.result is None or c.result.p_value is None:
            return None
        if self.unit == "%":
            if c.base == 0:
                return None
            change = (c.value - c.base) / abs(c.base) * 100
        else:
            change = (c.value - c.base) / (UNITS.get(self.unit, 1.0) if c.figure.unit == "ns" else 1.0)
        beyond = change > self.amount if self.op == ">" else change < self.amount
        if not beyond:
            return None
        q = f"q = {c.q_value:.2g}" if c.q_value is not None else f"p = {c.result.p_value:.2g}"
        what = c.result.extra.get("to_decide") or "more rounds of each setting (`rtgauge run --rounds N`) would narrow it"
        return (f"{c.figure.label}: {self.shown_pair(c)} ({change:+.1f}{self.unit or ''}) is "
                f"beyond the rule but within the noise ({q}); {what}")

    def fails_closed(self, changes: list[Change], cand: Run) -> list[str]:
        """Sentences for what this rule cannot check: a gate fails closed."""
        mine = [c for c in changes if c.figure.family == self.family]
        out = []
        for c in mine:
            if c.call == INVALID:
                out.append(f"{self.text}: {c.figure.label} cannot be checked in run {cand.id} "
                           f"({c.why}); a gate fails when it has nothing valid to check.")
            elif c.call == GONE:
                out.append(f"{self.text}: {c.figure.label} is missing from run {cand.id} "
                           "(its job failed or did not run); a gate fails when it has nothing valid to check.")
            elif c.figure.failed:
                out.append(f"{self.text}: {c.figure.label} in run {cand.id} lost rounds "
                           f"({'; '.join(c.figure.failed)}); a gate fails when part of its figure failed.")
        if not mine:
            out.append(f"{self.text}: run {cand.id} has no {self.family} figure to check "
                       "(a job failed, was not run, or the baseline lacks it); a gate fails when it has "
                       "nothing to check.")
        elif self.signed and not any(c.base is not None and c.value is not None for c in mine):
            out.append(f"{self.text}: no {self.family} figure is in both runs to compare; a gate fails when it "
                       "has nothing to check.")
        return out


def parse_rule(text: str) -> Rule:
    m = RULE.match(text)
    if not m or m.group(1) not in FAMILIES:
        raise UserError(f"--fail-on '{text}' is not a rule; write FIGURE>CHANGE such as 'max_latency>+20%', "
                        f"'avg_latency>+5us', 'misses>0' or 'tire_max_masses<-10%', with FIGURE one of "
                        f"{', '.join(FAMILIES)}.")
    family, op, sign, amount, unit = m.groups()
    amount = float(amount) * (-1 if sign == "-" else 1)
    unit = "us" if unit == "µs" else (unit or "")
    if unit == "%" and not sign:
        raise UserError(f"--fail-on '{text}': a percentage is a change from the baseline; write it with a sign, "
                        f"e.g. '{family}{op}+{m.group(4)}%'.")
    return Rule(text, family, op, bool(sign), amount, unit)
