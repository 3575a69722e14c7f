"""The estimate: analyse() takes a series of block maxima through the checks to an
estimate or a refusal with its code (GEV on block maxima, else peaks over a threshold),
and the answers of stored measurements (worst_case, measurement_pwcet)."""

from __future__ import annotations

import copy
import hashlib
import math
from collections import OrderedDict

import numpy as np

from rtgauge.analysis.pwcet import pot
from rtgauge.defaults import DEFAULT_EXCEEDANCE
from rtgauge.errors import UserError
from rtgauge.records import Measurement
from rtgauge.analysis.pwcet.fit import (
    ALPHA, EXTRAPOLATION, GOF_DRAWS, MAX_SPAN, MIN_BLOCKS, MIX_ALPHA, MIX_GAP, POT_METHOD, _level_at, cycles_needed,
    evidence_limit, fit_gev, shape_interval, supported_level, tail_class,
)
from rtgauge.analysis.pwcet.checks import (
    Check, _failed_text, check_cluster_rate, check_fit, check_identical, check_independence, find_mixture,
    holdout_check, holdout_check_pot,
)
from rtgauge.analysis.pwcet.text import Pwcet, _num


# answers already worked out in this process: one report asks for the same measurement's
# worst case from several places (the verdict, the pWCET section, each study's projection,
# the conclusions), and each answer costs seconds of fitting and bootstrap. The analysis
# is deterministic (seeded), so a repeated question gets the same answer, copied.
_ANSWERS: OrderedDict = OrderedDict()
_ANSWERS_KEPT = 64


def analyse(maxima, block_cycles: int, exceedance: float = DEFAULT_EXCEEDANCE, interval_ns: int | None = None,
            label: str = "all threads", source: str = "ti_window_max", gof_draws: int = GOF_DRAWS) -> Pwcet:
    """The probable worst case of a series of block maxima (ns, in time order): an
    estimate at the requested per-cycle probability with its interval, or a refusal with
    a stable code (CODES) and, where a fit is sound, the level at the smallest probability
    the data support. docs/pwcet.md gives the order of the steps."""
    try:
        series = np.asarray([np.nan if v is None else v for v in maxima], dtype=float)
    except (TypeError, ValueError):     # not numbers: _analyse says what is wrong
        return _analyse(maxima, block_cycles, exceedance, interval_ns, label, source, gof_draws)
    key = (hashlib.blake2b(series.tobytes(), digest_size=16).digest(), len(series), int(block_cycles),
           exceedance, interval_ns, label, source, gof_draws)
    hit = _ANSWERS.get(key)
    if hit is None:
        hit = _analyse(maxima, block_cycles, exceedance, interval_ns, label, source, gof_draws)
        _ANSWERS[key] = hit
        while len(_ANSWERS) > _ANSWERS_KEPT:
            _ANSWERS.popitem(last=False)
    else:
        _ANSWERS.move_to_end(key)
    return copy.deepcopy(hit)


def _analyse(maxima, block_cycles: int, exceedance: float, interval_ns: int | None, label: str, source: str,
             gof_draws: int) -> Pwcet:
    if not 0 < exceedance < 1:
        raise UserError(f"the exceedance probability must be between 0 and 1 (got {exceedance:g}); "
                        "give e.g. --exceedance 1e-9.")
    x = np.asarray([v for v in maxima if v is not None], dtype=float)
    m = int(block_cycles)
    res = Pwcet(label=label, source=source, exceedance=exceedance, block_cycles=m,
                interval_ns=interval_ns, blocks=len(x), observed_max_ns=float(x.max()) if len(x) else None,
                applicable=False, reason=None, maxima_ns=x.tolist())
    res.cycles_needed = cycles_needed(exceedance, m)

    def refuse(code: str, reason: str) -> Pwcet:
        res.code, res.reason = code, reason
        return res

    if len(x) < MIN_BLOCKS:
        reason = f"only {len(x)} block maxima (at least {MIN_BLOCKS} are needed); run longer or use shorter windows"
        res.checks.append(Check("enough blocks", f"at least {MIN_BLOCKS} block maxima", len(x), None, False, reason))
        return refuse("too-few-maxima", reason)
    if np.ptp(x) == 0:
        reason = "every block maximum is the same value, so there is no tail to fit"
        res.checks.append(Check("a tail", "the block maxima differ", 0.0, None, False, reason))
        return refuse("no-tail", reason)
    # the more specific diagnosis first: rare stalls also disturb the i.i.d. checks
    mix = find_mixture(x)
    if mix is not None:
        res.mixture = mix
        res.checks.append(Check(
            "one regime", f"the bulk's GEV tail reaches the largest maxima (a gap of at least ×{MIX_GAP:g} in "
            f"the top fifth; chance at least {MIX_ALPHA:g})", mix["chance"], mix["chance"], False,
            "the largest maxima are a second regime the bulk cannot produce"))
        return refuse("mixture", (
            f"the maxima are two regimes: {mix['bulk_blocks']} blocks up to {mix['bulk_max_ns'] / 1000:,.1f} µs and "
            f"{mix['rare_blocks']} of {mix['rare_min_ns'] / 1000:,.1f}–{mix['rare_max_ns'] / 1000:,.1f} µs (e.g. host "
            f"stalls), which the bulk's tail gives less than {MIX_ALPHA:g} chance; {mix['rare_blocks']} rare events "
            "are too few to extrapolate their regime"))
    res.checks += [check_independence(x), check_identical(x)]
    failed = [c for c in res.checks if c.passed is False]
    if failed:
        # dependent (or, by a test that assumes independence, drifting) block maxima:
        # peaks over a threshold, declustered, have their own checks (docs/pwcet.md)
        return _analyse_pot(res, x, m, exceedance, gof_draws, failed)
    try:
        fit = fit_gev(x)
    except ValueError:
        return refuse("bad-fit", "the GEV fit did not converge")
    res.fit = fit
    res.shape_low, res.shape_high = shape_interval(fit, x)
    res.tail = tail_class(res.shape_low, res.shape_high)
    gof = check_fit(x, fit, gof_draws)
    res.checks.append(gof)
    if not gof.passed:
        return refuse("bad-fit", _failed_text([gof]))
    hold = holdout_check(x)
    res.checks.append(hold)
    if hold.passed is False:
        return refuse("failed-validation", _failed_text([hold]))
    return _conclude(res, x, "")


def _conclude(res: Pwcet, x: np.ndarray, prefix: str) -> Pwcet:
    """The end of the answer once a fit passed its checks (either method): a heavy tail,
    the evidence limit, the width of the interval, or the estimate."""
    fit, exceedance, m = res.fit, res.exceedance, res.block_cycles

    def refuse(code: str, reason: str) -> Pwcet:
        res.code, res.reason = code, prefix + reason
        return res

    # a heavy tail's level grows as a power of the return period: the data support it
    # only within the range they cover (a return period of the cycles observed)
    sup = supported_level(fit, x, exceedance, m, 1.0 if res.tail == "heavy" else EXTRAPOLATION)
    if sup is not None:
        res.supported_exceedance, res.supported_level_ns, res.supported_low_ns, res.supported_high_ns = sup
    support_text = ("" if sup is None else
                    f"; the largest level the data support is {sup[1] / 1000:,.1f} µs (95% CI {sup[2] / 1000:,.1f}–"
                    f"{sup[3] / 1000:,.1f} µs) at p={sup[0]:.2g}")
    if res.tail == "heavy":
        return refuse("heavy-tail", (
            f"the latency tail of this system is heavy (shape ξ={fit.shape:+.2f}, 95% CI "
            f"{_num(res.shape_low)} to {_num(res.shape_high)}): no credible bound at p={exceedance:g} from this run"
            + support_text))
    if exceedance < evidence_limit(len(x), m) * (1 - 1e-9):
        return refuse("beyond-evidence", (
            f"p={exceedance:g} is beyond the evidence: {len(x) * m:,} cycles support levels down to "
            f"p={evidence_limit(len(x), m):.2g} ({EXTRAPOLATION:g} times the cycles observed)" + support_text))
    level, low, high, why = _level_at(fit, x, exceedance, m)
    if why is not None:
        span = "unbounded" if high is None else f"{low / 1000:,.1f}–{high / 1000:,.1f} µs"
        return refuse("too-uncertain", f"the 95% interval at p={exceedance:g} is {span}, wider than "
                      f"{MAX_SPAN:g}×" + support_text)
    res.level_ns, res.ci_low_ns, res.ci_high_ns = level, low, high
    res.applicable = True
    return res


def _analyse_pot(res: Pwcet, x: np.ndarray, m: int, exceedance: float, gof_draws: int,
                 failed: list[Check]) -> Pwcet:
    """The block maxima failed the i.i.d. checks: peaks over a threshold with
    declustering (rtgauge/analysis/pwcet/pot.py), which answer only when the declustered
    cluster peaks pass their own checks; the refusal codes are the GEV path's, plus
    too-few-exceedances."""
    res.method = POT_METHOD
    why = "; ".join(f"{c.name} p={c.p_value:.2g}" for c in failed if c.p_value is not None) or "not i.i.d."
    prefix = f"the block maxima are not i.i.d. ({why}), so peaks over a threshold were tried: "

    def refuse(code: str, reason: str) -> Pwcet:
        res.code, res.reason = code, prefix + reason
        return res

    try:
        fit = pot.fit_series(x)
    except ValueError:
        return refuse("bad-fit", "the GPD fit did not converge")
    if fit is None:
        most = pot.most_peaks(x)
        detail = (f"at most {most} cluster peaks above the {pot.THRESHOLD_QUANTILES[-1]:.2f} quantile of the "
                  f"{len(x)} block maxima (at least {pot.MIN_PEAKS} are needed)")
        res.checks.append(Check("enough cluster peaks", f"at least {pot.MIN_PEAKS} declustered exceedances", most,
                                None, False, detail))
        if any(c.name == "identical distribution" for c in failed):
            # a drift as well: more windows would not make the series one distribution
            return refuse("not-iid", f"{_failed_text(failed)}; and {detail}")
        return refuse("too-few-exceedances", f"{detail}; run longer (more windows) for more clusters")
    res.fit = fit
    res.checks.append(Check(
        "threshold", f"highest quantile of {', '.join(f'{q:g}' for q in pot.THRESHOLD_QUANTILES)} with at least "
        f"{pot.MIN_PEAKS} cluster peaks", fit.threshold, None, True,
        f"{fit.quantile:g} quantile, {fit.threshold / 1000:,.1f} µs: {fit.exceedances} exceedances, extremal index "
        f"θ={fit.extremal_index:.2f} (intervals estimator), {fit.clusters} clusters"))
    peaks = fit.peaks
    ind = check_independence(peaks)
    ind.name = "independence of cluster peaks"
    same = check_identical(peaks)
    same.name = "identical distribution of cluster peaks"
    rate = check_cluster_rate(fit)
    res.checks += [ind, same, rate]
    bad = [c for c in (ind, same, rate) if c.passed is False]
    if bad:
        return refuse("not-iid", "the declustered peaks fail too: " + _failed_text(bad, "cluster peaks"))
    res.shape_low, res.shape_high = pot.shape_interval(fit)
    res.tail = tail_class(res.shape_low, res.shape_high)
    a2, p, used = pot.goodness_of_fit(fit, gof_draws)
    gof = Check("goodness of fit", f"Anderson-Darling against the fitted GPD, {used} bootstrap draws", a2, p,
                bool(p > ALPHA), f"shape ξ={fit.shape:+.2f} over {fit.clusters} cluster peaks")
    res.checks.append(gof)
    if not gof.passed:
        return refuse("bad-fit", _failed_text([gof], "cluster peaks"))
    hold = holdout_check_pot(x, fit.threshold)
    res.checks.append(hold)
    if hold.passed is False:
        return refuse("failed-validation", _failed_text([hold], "cluster peaks"))
    if -math.log1p(-res.block_exceedance) >= fit.rate:
        return refuse("below-threshold", (
            f"p={exceedance:g} asks for a level exceeded more often than the clusters above the threshold "
            f"{fit.threshold / 1000:,.1f} µs come ({fit.rate:.3g} a window), which the tail model does not "
            "describe; the observed maxima answer it, or ask for a smaller p"))
    return _conclude(res, x, prefix)



def _series_keys(metrics: dict) -> list[tuple[str, str]]:
    threads = sorted((k for k in metrics if k.startswith("ti_window_max#") and k.split("#")[1].isdigit()),
                     key=lambda k: int(k.split("#")[1]))
    out = [(k, f"thread {k.split('#')[1]}") for k in threads]
    if "ti_window_max" in metrics:
        out.insert(0, ("ti_window_max", "all threads"))
    return out


def measurement_series(m: Measurement, key: str = "ti_window_max") -> tuple[list, int, int] | None:
    """(block maxima ns, block cycles, interval ns) of one stored series, or None when the
    measurement did not store one. Windows that are not full (the last one, when the run
    did not end on a window edge) are dropped: a shorter block has a smaller maximum."""
    metrics = m.metrics
    series = metrics.get(key)
    interval_ns = m.period_ns
    if not series or not series.window_ns or not interval_ns or m.test != "latency":
        return None
    block = int(series.window_ns // interval_ns)
    if block < 1:
        return None
    vals = list(series.series or [])
    suffix = key[len("ti_window_max"):]
    elapsed = sum((m.scalar(f"{n}{suffix}") or 0) for n in ("cycles", "skipped"))
    if suffix == "" and any(k.startswith("cycles#") for k in metrics):
        # the whole-run counters add the threads; deadlines elapsed are per thread
        threads = sum(1 for k in metrics if k.startswith("cycles#"))
        elapsed = elapsed // max(threads, 1)
    if elapsed:
        vals = vals[: int(elapsed // block)]
    return vals, block, interval_ns


def seen_max(r: Pwcet, seen_ns: float | None) -> Pwcet:
    """The answer with the series' own maximum over every cycle as its observed maximum:
    the block maxima leave out a last window that is not full (a run stopped at its first
    spike by --trace-threshold-us ends inside one), so their largest can be far below what
    the run saw. When that maximum lies in the left-out window and above the whole interval
    of the estimate, the fit left out the very wake-up that ended the run and the run
    contradicts its answer: refused (failed-validation), whatever the fit said."""
    if seen_ns is None or not math.isfinite(seen_ns):
        return r
    left_out = r.observed_max_ns is None or seen_ns > r.observed_max_ns
    if left_out:
        r.observed_max_ns = float(seen_ns)
    if left_out and r.applicable and r.ci_high_ns is not None and r.observed_max_ns > r.ci_high_ns:
        reason = (f"the run's own maximum {r.observed_max_ns / 1000:,.1f} µs, in a window the fit could not use "
                  f"(not full: the run stopped in it), is above the estimate's 95% interval "
                  f"({r.ci_low_ns / 1000:,.1f}–{r.ci_high_ns / 1000:,.1f} µs) at p={r.exceedance:g}")
        r.checks.append(Check("the run's own maximum", "below the upper end of the interval", r.observed_max_ns,
                              None, False, reason))
        r.applicable, r.code, r.reason = False, "failed-validation", reason
        r.level_ns = r.ci_low_ns = r.ci_high_ns = None
    return r


def _series_max(m: Measurement, key: str) -> float | None:
    """The largest ti of the series KEY (ti_window_max or ti_window_max#K) over every
    cycle the measurement counted: its own distribution's max (ti or ti#K)."""
    return m.metric("ti" + key[len("ti_window_max"):]).max


def measurement_pwcet(m: Measurement, exceedance: float = DEFAULT_EXCEEDANCE, per_thread: bool = False,
                      gof_draws: int = GOF_DRAWS) -> list[Pwcet]:
    """The pWCET of a stored latency measurement: the whole run (all threads), and each
    thread when asked. Empty when it stored no per-window maxima (e.g. cyclictest)."""
    out = []
    for key, label in _series_keys(m.metrics):
        if key != "ti_window_max" and not per_thread:
            continue
        s = measurement_series(m, key)
        if s is None:
            continue
        vals, block, interval_ns = s
        out.append(seen_max(analyse(vals, block, exceedance, interval_ns, label, "ti_window_max", gof_draws),
                            _series_max(m, key)))
    return out


def worst_case(m: Measurement, exceedance: float = DEFAULT_EXCEEDANCE, thread: int | None = None) -> Pwcet | None:
    """THE worst-case answer of one stored latency measurement, for every caller (the
    terminal, the report, `show --json`, `pwcet --json`, a verdict against a budget): all
    threads together, or one thread. None when it stored no per-window maxima. The fields
    (docs/pwcet.md, "The answer"): observed_max_ns; applicable with level_ns, ci_low_ns,
    ci_high_ns (the estimate at `exceedance`) or code and reason (the refusal);
    supported_exceedance and supported_level_ns (the level at the smallest probability the
    data support, where a fit is sound); run_needed_s (the run the requested probability
    needs). to_json() gives the same as JSON."""
    key = "ti_window_max" if thread is None else f"ti_window_max#{thread}"
    s = measurement_series(m, key)
    if s is None:
        return None
    vals, block, interval_ns = s
    label = "all threads" if thread is None else f"thread {thread}"
    return seen_max(analyse(vals, block, exceedance, interval_ns, label, "ti_window_max"), _series_max(m, key))
