"""The statistics of a comparison: how sure we are that a figure changed.

A figure of a run is measured once per round (an independent engine invocation).
Two runs are compared figure by figure:

- rounds on both sides (>= 2 on one side): a two-sample t-test on the round values
  (Welch's when both sides have >= 2 rounds, Student's pooled-variance test when one side
  has a single round, so that side borrows the other's round-to-round variance). The
  difference of the means and its 95 % interval come from the same test. The noise floor
  is the smallest difference that pair of runs could call (the half-width of that
  interval). Round values are floored at a quantisation spread (1/128 of the value, the
  resolution of the engine's log-linear histogram, and at least the clock's step as the
  figure's own histogram shows it, or 1 unit), so identical quantised values do not
  make a zero variance.
- a single round on both sides: the uncertainty inside each run understates the noise
  between runs. A latency p99 or maximum whose runs hold window maxima, a latency
  average whose runs hold per-window averages and missed deadlines whose runs hold
  per-window late periods (windows.py) are compared by compare_single_batches: log(b / a)
  against the within-run error plus each run's own between-batch spread (batch_spread,
  batch_means, batch_rates: 10 contiguous batches of its windows). Any other figure, and
  these when a run lacks its windows, by compare_single: against the documented
  run-to-run drift of the figure's family (DRIFT, a heavy-tailed t). Either way the within-run test must agree. The within-run tests: averages by their standard
  errors (stddev/sqrt(count), a z-test); percentiles by a two-by-two test of how many
  samples of each run lie above the pooled percentile (Fisher's exact test), with
  order-statistic intervals; maxima by an exceedance test (how many samples, or for a
  latency job windows, of one run lie above the other's maximum: under no change the
  top K of the pooled data come from one run with probability C(n, K) / C(N, K)),
  without an interval.
- counts of events over exposures (missed deadlines per cycle): the conditional binomial
  test of two Poisson rates, with the interval of the rate ratio.

The per-run interval of a figure: the Student-t interval over rounds (2..7 rounds) or
the bias-corrected bootstrap over rounds (8 rounds or more; with fewer, the bootstrap
interval is known to be too narrow); with one round, the within-run interval above.

The p-values of one comparison are adjusted together by Benjamini-Hochberg
(scipy.stats.false_discovery_control); a figure is called better or worse when its
adjusted value is below alpha (0.05 by default). docs/compare.md explains the choice.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

LEVEL = 0.95
BOOTSTRAP_MIN_ROUNDS = 8
RESOLUTION = 1.0 / 128


def _t_sf(x: float, df: float) -> float:
    """The upper tail of Student's t (scipy.special.stdtr: the same numbers as
    stats.t.sf at a hundredth of its call overhead; a compare tests hundreds of figures)."""
    return float(special.stdtr(df, -x))


def _t_ppf(p: float, df: float) -> float:
    return float(special.stdtrit(df, p))


def _norm_sf(x: float) -> float:
    return float(special.ndtr(-x))


def _norm_ppf(p: float) -> float:
    return float(special.ndtri(p))


def finite(values) -> list[float]:
    out = []
    for v in values or []:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if math.isfinite(v):
            out.append(float(v))
    return out


def is_valid(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class Within:
    """What one round says about its own uncertainty (single-round fallback)."""
    count: int | None = None
    stddev: float | None = None
    bins: list | None = None          # [[lo, hi, count], ...] of the round's histogram
    quantile: float | None = None     # 0.99 for p99


@dataclass
class Result:
    """A compared figure's statistics. Everything in the figure's unit."""
    method: str
    p_value: float | None = None
    difference: float | None = None
    interval: tuple[float, float] | None = None
    noise_floor: float | None = None
    base_interval: tuple[float, float] | None = None
    cand_interval: tuple[float, float] | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def clock_step(bins) -> float:
    """The step of the clock that took a distribution's samples, as its exact-value
    histogram bins show it: samples of a short call cluster a clock step apart (here
    CLOCK_MONOTONIC reads 20/21, 29-31, 40 ns: a step of 9-10 ns). Clusters are runs of
    populated values at most 2 units apart; the step is the smallest distance between
    the starts of consecutive clusters, with three clusters at least; else 1 unit."""
    exact = sorted(float(lo) for lo, hi, c in (bins or []) if c and lo == hi)
    starts = [v for i, v in enumerate(exact) if i == 0 or v - exact[i - 1] > 2]
    if len(starts) < 3:
        return 1.0
    return max(1.0, min(b - a for a, b in zip(starts, starts[1:])))


def quantisation_sd(values: np.ndarray, step: float = 1.0) -> float:
    """The spread a quantised figure has even when every round reads the same: its
    histogram's resolution or the clock's step, whichever is coarser."""
    level = float(np.mean(np.abs(values))) if len(values) else 0.0
    return max(level * RESOLUTION, step, 1.0) / math.sqrt(12)


def floored_sd(values: np.ndarray, step: float = 1.0) -> float:
    sd = float(np.std(values, ddof=1)) if len(values) >= 2 else 0.0
    return max(sd, quantisation_sd(values, step))


def run_interval(values: list[float], step: float = 1.0) -> tuple[float, float] | None:
    """95 % interval of the mean of one run's round values."""
    x = np.asarray(values, float)
    if len(x) < 2:
        return None
    if len(x) >= BOOTSTRAP_MIN_ROUNDS and np.ptp(x) > 0:
        res = stats.bootstrap((x,), np.mean, confidence_level=LEVEL, method="BCa", n_resamples=2000,
                              random_state=np.random.default_rng(12))
        lo, hi = res.confidence_interval
        if math.isfinite(lo) and math.isfinite(hi):
            return float(lo), float(hi)
    sd = floored_sd(x, step)
    mean, half = float(np.mean(x)), _t_ppf(0.5 + LEVEL / 2, len(x) - 1) * sd / math.sqrt(len(x))
    return mean - half, mean + half


def permutation_p(x, y) -> float | None:
    """Exact two-sided permutation p-value of the difference of the means of x and y:
    the share of the ways to split the pooled values into groups of their sizes whose
    difference is at least as large. None when there are too many ways to list."""
    pooled = [float(v) for v in (*x, *y)]
    n, k = len(pooled), len(x)
    if math.comb(n, k) > 20000:
        return None
    total = sum(pooled)
    seen = abs(sum(y) / len(y) - sum(x) / k)
    hits = ways = 0
    for idx in itertools.combinations(range(n), k):
        sx = sum(pooled[i] for i in idx)
        ways += 1
        hits += abs((total - sx) / (n - k) - sx / k) >= seen - 1e-9 * max(1.0, seen)
    return hits / ways


def compare_rounds(a: list[float], b: list[float], step: float = 1.0, extreme: bool = False) -> Result:
    """Round values of the baseline (a) and the candidate (b); at least one side has 2+.
    step: the clock step of the samples behind the values (clock_step).
    extreme: the values are maxima, one sample of each round: when neither side's rounds
    spread beyond a clock step, the rounds give no spread to test against (a maximum's
    spread comes from rare samples, not from the clock's step), and the p-value is at least
    the exact permutation test's (0.1 with three rounds a side)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    sx, sy = floored_sd(x, step), floored_sd(y, step)
    nx, ny = len(x), len(y)
    diff = float(np.mean(y) - np.mean(x))
    if nx >= 2 and ny >= 2:
        se = math.sqrt(sx ** 2 / nx + sy ** 2 / ny)
        # Welch-Satterthwaite degrees of freedom
        df = se ** 4 / ((sx ** 2 / nx) ** 2 / (nx - 1) + (sy ** 2 / ny) ** 2 / (ny - 1))
        method = f"Welch t-test over rounds ({nx} and {ny})"
    else:
        pooled = (((nx - 1) * sx ** 2 if nx > 1 else 0.0) + ((ny - 1) * sy ** 2 if ny > 1 else 0.0)) / (nx + ny - 2)
        pooled = max(pooled, quantisation_sd(np.concatenate([x, y]), step) ** 2)
        se = math.sqrt(pooled * (1 / nx + 1 / ny))
        df = nx + ny - 2
        method = (f"Student t-test over rounds ({nx} and {ny}; the single-round side borrows "
                  "the other's round-to-round variance)")
    t = diff / se
    p = 2 * _t_sf(abs(t), df)
    half = _t_ppf(0.5 + LEVEL / 2, df) * se
    extra = {"df": round(df, 2), "rounds": [nx, ny]}
    if extreme and nx >= 2 and ny >= 2 and np.ptp(x) <= step and np.ptp(y) <= step:
        exact = permutation_p(x, y)
        if exact is not None and exact > p:
            p = exact
            method += ("; the rounds of each side read the same maximum, so the p-value is the exact "
                       "permutation test's")
            extra["permutation_p"] = round(exact, 4)
            if exact > 1 - LEVEL:       # not resolved at this level: the interval holds 0 too
                half = max(half, abs(diff) * (1 + 1e-9))
    level = float(np.mean(x))
    if level > 0 and float(np.mean(y)) > 0:
        # rounds per side after which a change of this size would stand out of this scatter
        spread = math.sqrt((sx ** 2 + sy ** 2) / 2) / level
        need = rounds_to_decide(math.log(float(np.mean(y)) / level), spread)
        extra["rounds_to_decide"] = need
        extra["to_decide"] = (decide_text(need) if need and need > max(nx, ny) else decide_text(None)
                              if need is None else "more rounds of each setting would narrow it")
    if extra.get("permutation_p", 0) > 1 - LEVEL:
        n = 2
        while 2 / math.comb(2 * n, n) > 1 - LEVEL:
            n += 1
        extra["to_decide"] = (f"{n} rounds a side could resolve it (maxima that read the same in every round "
                              f"need {n} for the exact permutation test): measure each setting again with "
                              f"`rtgauge run --rounds {n}`; a stored run gains no rounds")
    return Result(method, p, diff, (diff - half, diff + half), half, run_interval(a, step), run_interval(b, step),
                  extra=extra)


def compare_means_within(a: float, sa: float, na: int, b: float, sb: float, nb: int) -> Result:
    """Single rounds: z-test of two means from their standard errors."""
    se = math.sqrt(sa ** 2 / na + sb ** 2 / nb)
    diff = b - a
    z = _norm_ppf(0.5 + LEVEL / 2)
    if se <= 0:
        p = 1.0 if diff == 0 else 0.0
    else:
        p = 2 * _norm_sf(abs(diff) / se)
    ia = (a - z * sa / math.sqrt(na), a + z * sa / math.sqrt(na))
    ib = (b - z * sb / math.sqrt(nb), b + z * sb / math.sqrt(nb))
    return Result("z-test of the means from each run's standard error (single round: within-run "
                  "uncertainty only, which understates the noise between runs)", p, diff,
                  (diff - z * se, diff + z * se), z * se, ia, ib, note="single round: within-run uncertainty only")


def expand_bins(bins) -> tuple[np.ndarray, np.ndarray]:
    """Histogram bins [[lo, hi, count], ...] as (representative values, counts), sorted."""
    rows = sorted((float(lo), float(hi), int(c)) for lo, hi, c in bins if c)
    return np.array([(lo + hi) / 2 for lo, hi, _ in rows]), np.array([c for *_, c in rows])


def value_at_rank(values: np.ndarray, counts: np.ndarray, rank: int) -> float:
    """The rank-th smallest sample (1-based) of a histogram."""
    cum = np.cumsum(counts)
    idx = int(np.searchsorted(cum, max(1, rank)))
    return float(values[min(idx, len(values) - 1)])


def quantile_interval(bins, q: float) -> tuple[float, float] | None:
    """Distribution-free interval of the q-quantile: the order statistics whose ranks bound
    the binomial(n, q) count below the quantile (the classic order-statistic interval)."""
    values, counts = expand_bins(bins)
    n = int(counts.sum())
    if n < 2:
        return None
    lo_rank = int(stats.binom.ppf((1 - LEVEL) / 2, n, q))
    hi_rank = int(stats.binom.ppf(0.5 + LEVEL / 2, n, q)) + 1
    return value_at_rank(values, counts, lo_rank), value_at_rank(values, counts, min(hi_rank, n))


def compare_quantile_within(a: Within, b: Within, va: float, vb: float) -> Result:
    """Single rounds: are the two runs' q-quantiles the same? Counts of samples above the
    pooled q-quantile in each run, Fisher's exact test on the 2x2 table."""
    q = a.quantile
    xa, ca = expand_bins(a.bins)
    xb, cb = expand_bins(b.bins)
    allv = np.concatenate([xa, xb])
    allc = np.concatenate([ca, cb])
    order = np.argsort(allv, kind="stable")
    allv, allc = allv[order], allc[order]
    n = int(allc.sum())
    threshold = value_at_rank(allv, allc, int(math.ceil(q * n)))
    above_a, above_b = int(ca[xa > threshold].sum()), int(cb[xb > threshold].sum())
    na, nb = int(ca.sum()), int(cb.sum())
    _, p = stats.fisher_exact([[above_a, na - above_a], [above_b, nb - above_b]])
    return Result(f"Fisher's exact test of the samples above the pooled p{q * 100:g} "
                  f"({above_a} of {na} against {above_b} of {nb}; single round: within-run "
                  "uncertainty only, which understates the noise between runs)", float(p), vb - va, None, None,
                  quantile_interval(a.bins, q), quantile_interval(b.bins, q),
                  note="single round: within-run uncertainty only")


def compare_max_within(a: Within, b: Within, va: float, vb: float) -> Result:
    """Single rounds: the exceedance test of the maxima. K samples of the candidate above
    the baseline's maximum: under no change, the K largest of the pooled samples all come
    from the candidate with probability C(nb, K) / C(na + nb, K) (hypergeometric); and the
    same the other way. Two-sided: twice the smaller tail. No interval: one maximum."""
    xa, ca = expand_bins(a.bins)
    xb, cb = expand_bins(b.bins)
    na, nb = int(ca.sum()), int(cb.sum())
    k_b = int(cb[xb > va].sum())       # candidate samples above the baseline's max
    k_a = int(ca[xa > vb].sum())
    n = na + nb

    def tail(k, nk):
        return float(stats.hypergeom.pmf(k, n, nk, k)) if k > 0 else 1.0
    p = min(1.0, 2 * min(tail(k_b, nb), tail(k_a, na)))
    return Result(f"exceedance test of the maxima ({k_b} candidate samples above the baseline's "
                  f"maximum, {k_a} baseline samples above the candidate's; single round: within-run "
                  "uncertainty only; no interval for one maximum)", p, vb - va, None, None, None, None,
                  note="single round: no interval for a maximum",
                  extra={"candidate_above_baseline_max": k_b, "baseline_above_candidate_max": k_a})


# ---- single rounds: within-run uncertainty plus the run-to-run drift ----------------

# The run-to-run drift of a figure on this kind of machine (a shared 2-vCPU VM): the
# standard deviation of log(figure) between two engine invocations of the same job
# minutes apart that the run itself cannot see, per family. Measured here with
# bench/compare_aa.py (docs/compare.md "Single runs", docs/performance.md); a figure
# compared between single rounds carries it on both sides, so one round never calls a
# change on within-run uncertainty alone. The drift is heavy-tailed (most figures
# barely move, a few move by a factor of several): the test refers the statistic to a
# Student t with drift_df(family) degrees of freedom (fitted too), not to the normal.
DRIFT = {   # fitted 2026-11-25 to the 23 A/A pairs of runs 1-29 (bench/compare_aa.py drift)
    "avg_latency": 0.37, "p99_latency": 0.68, "max_latency": 1.17, "avg_latency_stall_free": 0.24,
    "micro_avg": 0.11, "micro_p99": 0.18, "micro_max": 0.82, "micro_avg_stall_free": 0.11,
    "misses": 0.56,
}
DRIFT_DF = 3   # a family without its own fit
DRIFT_DF_BY_FAMILY = {   # the same fit's degrees of freedom (free fit rounded down, within 2..10)
    "avg_latency": 2, "p99_latency": 2, "max_latency": 6, "avg_latency_stall_free": 2,
    "micro_avg": 5, "micro_p99": 2, "micro_max": 2, "micro_avg_stall_free": 5, "misses": 3,
}


def drift_df(family: str) -> float:
    return DRIFT_DF_BY_FAMILY.get(family, DRIFT_DF)


MAX_ROUNDS_ADVISED = 30


def decide_text(need: int | None) -> str:
    """What would decide an undecided change, for runs already stored: a stored run gains
    no rounds, so both settings are measured again, NEED rounds each (interleaved in one
    run where both can run on one machine)."""
    if need is None:
        return f"a change this small needs more than {MAX_ROUNDS_ADVISED} rounds a side"
    return (f"{need} rounds a side would resolve a change of this size: measure each setting again with "
            f"`rtgauge run --rounds {need}` (both in one run with --interleave when they run on one machine); "
            "a stored run gains no rounds")


def rounds_to_decide(log_change: float, drift: float) -> int | None:
    """Rounds per side (interleaved) after which a change of this size (log ratio)
    would stand out of the drift: the interval's half-width t * sqrt(2 * drift^2 / n)
    below the change, with the t of n - 1 + n - 1 degrees of freedom. None beyond
    MAX_ROUNDS_ADVISED (the change is too small to resolve by rounds alone)."""
    d = abs(log_change)
    if d <= 0 or drift <= 0:
        return None
    for n in range(2, MAX_ROUNDS_ADVISED + 1):
        if _t_two_sided(2 * n - 2) * math.sqrt(2 * drift ** 2 / n) < d:
            return n
    return None


@functools.lru_cache(maxsize=256)
def _t_two_sided(df: float) -> float:
    """The t quantile of the two-sided LEVEL interval (asked again and again with the same
    degrees of freedom: 29 a figure, hundreds of figures a compare)."""
    return _t_ppf(0.5 + LEVEL / 2, df)


def _log_se(value: float, interval: tuple[float, float] | None, se: float | None) -> float:
    """The within-run standard error of log(value): from a standard error in the
    figure's unit, or from a 95 % interval (its log width over 2 * 1.96)."""
    if se is not None and value > 0:
        return se / value
    if interval and interval[0] > 0 and interval[1] > 0:
        return math.log(interval[1] / interval[0]) / (2 * 1.959964)
    return 0.0


def compare_single(va: float, vb: float, drift: float, se_a: float = 0.0, se_b: float = 0.0,
                   within: Result | None = None, floor: float = 1.0, df: float = DRIFT_DF) -> Result:
    """Single rounds on both sides: log(vb / va) against its noise, the within-run
    standard errors (se_a, se_b of the logs) plus the run-to-run drift on each side,
    referred to a t with DRIFT_DF degrees of freedom. within: the within-run test of
    the same figure (its p-value is the lower bound of this one: a call needs both the
    within-run evidence and a change beyond the drift). Values are floored at `floor`
    (the quantisation) so that a zero does not make an infinite ratio."""
    a, b = max(va, floor), max(vb, floor)
    d = math.log(b / a)
    se = math.sqrt(se_a ** 2 + se_b ** 2 + 2 * drift ** 2)
    p = 2 * _t_sf(abs(d) / se, df)
    if within is not None and within.p_value is not None and math.isfinite(within.p_value):
        p = max(p, within.p_value)
    half = _t_two_sided(df) * se
    iv = (va * (math.exp(max(d - half, -700)) - 1), va * (math.exp(min(d + half, 700)) - 1))
    need = rounds_to_decide(d, drift)
    what = decide_text(need)
    method = (f"single rounds: log ratio against the within-run error plus a run-to-run drift of "
              f"{drift:.0%} per run (t, {df:g} df; docs/compare.md)" +
              (f"; within-run: {within.method}" if within is not None else ""))
    return Result(method, p, vb - va, iv, va * (math.exp(min(half, 700)) - 1),
                  within.base_interval if within else None, within.cand_interval if within else None,
                  note="single round: within-run error plus run-to-run drift",
                  extra={"log_ratio": d, "drift": drift, "within_p_value": None if within is None else within.p_value,
                         "rounds_to_decide": need, "to_decide": what})


# ---- single rounds: each run's own between-batch spread --------------------------

BATCHES = 10            # contiguous batches a run's window series is split into
MIN_BATCHES = 5         # fewer (a short run, long windows): the drift model instead
MIN_WINDOWS_PER_BATCH = 2


@dataclass
class Batches:
    """What one run's per-window maxima say about how far its figure would move in
    another run: the figure's stand-in computed over each of B contiguous batches of the
    windows, and the standard deviation of its log over the batches (a run is known no
    better than one of its batches: docs/compare.md "Single runs")."""
    values: list[float]      # the stand-in of each batch, in the figure's unit
    spread: float            # sd of log(values), ddof 1, floored at the histogram's resolution
    windows: int
    source: str = "its window maxima"   # what the batches were computed from (said in the method)

    @property
    def count(self) -> int:
        return len(self.values)


def batch_spread(windows: list[float], statistic: str) -> Batches | None:
    """A run's own between-batch spread from its per-window maxima (ti_window_max):
    the series (in time order) split into BATCHES contiguous batches of at least
    MIN_WINDOWS_PER_BATCH windows; statistic "p99": the median of the batch's window
    maxima (a window holds 100 to 2,000 wake-ups, so its maximum is a high quantile of
    that window: the closest to a p99 the stored windows hold, and a higher quantile
    spreads more, so this errs wide); "max": the batch's largest window maximum. None
    when the run has too few windows (fewer than MIN_BATCHES batches)."""
    x = np.asarray([v for v in windows if is_valid(v) and v > 0], float)
    b = min(BATCHES, len(x) // MIN_WINDOWS_PER_BATCH)
    if b < MIN_BATCHES:
        return None
    parts = np.array_split(x, b)
    pick = np.median if statistic == "p99" else np.max
    return _batches_of([float(pick(part)) for part in parts], len(x), "its window maxima")


def _batches_of(values: list[float], windows: int, source: str) -> Batches:
    sd = float(np.std(np.log(values), ddof=1))
    return Batches(values, max(sd, RESOLUTION / math.sqrt(12)), windows, source)


def batch_means(avgs: list, cycles: list) -> Batches | None:
    """A run's own between-batch spread of its average from its per-window averages and
    wake-ups (windows.window_figures): the windows, in time order, split into BATCHES
    contiguous batches as batch_spread does; a batch's value is the exact mean of its
    wake-ups (the cycle-weighted mean of its windows' averages). None with too few
    windows holding wake-ups."""
    pairs = [(float(a), float(c)) for a, c in zip(avgs, cycles) if is_valid(a) and a > 0 and is_valid(c) and c > 0]
    b = min(BATCHES, len(pairs) // MIN_WINDOWS_PER_BATCH)
    if b < MIN_BATCHES:
        return None
    parts = np.array_split(np.asarray(pairs, float), b)
    values = [float((part[:, 0] * part[:, 1]).sum() / part[:, 1].sum()) for part in parts]
    return _batches_of(values, len(pairs), "its per-window averages")


def batch_rates(late: list, periods: list) -> Batches | None:
    """A run's own between-batch spread of its missed deadlines per period from its
    per-window late periods (misses + skipped) and periods (windows.window_figures): a
    batch's value is (late + 0.5) / periods over its windows, half an event added so that
    a batch without a miss has a finite log (which errs wide: a batch's Poisson
    scatter is counted in its spread, on top of the run's own counting error). None with
    too few windows holding periods."""
    pairs = [(float(k), float(n)) for k, n in zip(late, periods) if is_valid(k) and k >= 0 and is_valid(n) and n > 0]
    b = min(BATCHES, len(pairs) // MIN_WINDOWS_PER_BATCH)
    if b < MIN_BATCHES:
        return None
    parts = np.array_split(np.asarray(pairs, float), b)
    values = [float((part[:, 0].sum() + 0.5) / part[:, 1].sum()) for part in parts]
    return _batches_of(values, len(pairs), "its per-window late periods")


def compare_single_batches(va: float, vb: float, ba: Batches, bb: Batches, se_a: float = 0.0, se_b: float = 0.0,
                           within: Result | None = None, floor: float = 1.0) -> Result:
    """Single rounds whose runs hold batches (batch_spread): log(vb / va) against the
    within-run standard errors plus each run's own between-batch spread, referred to a
    Student t with the Welch-Satterthwaite degrees of freedom of the two spreads (B - 1
    each). The within-run test must agree (its p-value is a lower bound), as in
    compare_single. No machine's constant enters."""
    a, b = max(va, floor), max(vb, floor)
    d = math.log(b / a)
    sa, sb = ba.spread, bb.spread
    se = math.sqrt(se_a ** 2 + se_b ** 2 + sa ** 2 + sb ** 2)
    df = (sa ** 2 + sb ** 2) ** 2 / (sa ** 4 / (ba.count - 1) + sb ** 4 / (bb.count - 1))
    p = 2 * _t_sf(abs(d) / se, df)
    if within is not None and within.p_value is not None and math.isfinite(within.p_value):
        p = max(p, within.p_value)
    half = _t_ppf(0.5 + LEVEL / 2, df) * se
    iv = (va * (math.exp(max(d - half, -700)) - 1), va * (math.exp(min(d + half, 700)) - 1))
    spread = math.sqrt((sa ** 2 + sb ** 2) / 2)
    need = rounds_to_decide(d, spread)
    method = (f"single rounds: log ratio against each run's own between-batch spread ({sa:.0%} and {sb:.0%} "
              f"over {ba.count} and {bb.count} batches of {bb.source}; t, {df:.1f} df; docs/compare.md)" +
              (f"; within-run: {within.method}" if within is not None else ""))
    return Result(method, p, vb - va, iv, va * (math.exp(min(half, 700)) - 1),
                  within.base_interval if within else None, within.cand_interval if within else None,
                  note="single round: within-run error plus each run's own between-batch spread",
                  extra={"log_ratio": d, "batch_spread": [sa, sb], "batches": [ba.count, bb.count],
                         "batch_values": [ba.values, bb.values], "df": round(df, 2),
                         "within_p_value": None if within is None else within.p_value,
                         "rounds_to_decide": need, "to_decide": decide_text(need)})


def compare_windows(wa: list[float], wb: list[float], ma: float, mb: float) -> Result:
    """Single rounds with per-window maxima (the latency job's ti_window_max): the
    exceedance test over windows instead of samples. Under no change the windows of
    both runs are exchangeable, and the K windows of one run above the other's maximum
    are the top K of the pooled windows with probability C(n, K) / C(N, K). A window
    holds thousands of dependent samples; a window is the unit that is close to
    independent, which the per-sample test is not."""
    na, nb = len(wa), len(wb)
    k_b = sum(1 for v in wb if v > ma)
    k_a = sum(1 for v in wa if v > mb)
    n = na + nb

    def tail(k, nk):
        return float(stats.hypergeom.pmf(k, n, nk, k)) if k > 0 else 1.0
    p = min(1.0, 2 * min(tail(k_b, nb), tail(k_a, na)))
    return Result(f"exceedance test of the window maxima ({k_b} of {nb} candidate windows above the baseline's "
                  f"maximum, {k_a} of {na} baseline windows above the candidate's)", p, mb - ma,
                  extra={"candidate_windows_above": k_b, "baseline_windows_above": k_a, "windows": [na, nb]})


def compare_rates(ka: float, na: float, kb: float, nb: float) -> Result:
    """Events ka in exposure na against kb in nb (missed deadlines per cycle): the
    conditional binomial test of two Poisson rates and the interval of their ratio."""
    ka, kb = int(round(ka)), int(round(kb))
    k = ka + kb
    share = nb / (na + nb)
    ra, rb = ka / na, kb / nb     # the difference: candidate count minus the baseline rate times its exposure
    if k == 0:
        return Result("binomial test of the event rates (no events in either run)", 1.0, 0.0, None, None,
                      note="no events", extra={"ratio": None})
    test = stats.binomtest(kb, k, share)
    ci = test.proportion_ci(LEVEL, method="exact")

    def ratio(p):
        return math.inf if p >= 1 else (p / (1 - p)) * (na / nb)
    return Result(f"binomial test of the event rates ({ka} in {na:,.0f} against {kb} in {nb:,.0f})",
                  float(test.pvalue), float(kb - ka * nb / na), None, None, None, None,
                  extra={"rates": [ra, rb], "rate_ratio": None if ka == 0 else (rb / ra),
                         "rate_ratio_interval": [ratio(ci.low), ratio(ci.high)]})


def compare_proportions(fa: int, na: int, fb: int, nb: int) -> Result:
    """Failing rounds of a yes/no verdict: Fisher's exact test."""
    _, p = stats.fisher_exact([[fa, na - fa], [fb, nb - fb]])
    return Result(f"Fisher's exact test of failing rounds ({fa} of {na} against {fb} of {nb})", float(p),
                  fb / nb - fa / na, None, None, None, None,
                  note="" if (na > 1 or nb > 1) else "single round: a flip cannot be significant; run rounds")


def adjust(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values) of one comparison."""
    if not p_values:
        return []
    return [float(q) for q in stats.false_discovery_control(np.clip(np.asarray(p_values, float), 0, 1),
                                                             method="bh")]
