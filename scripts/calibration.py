"""Validation that can fail, for the probable worst case (docs/pwcet.md, "Validation").

A method is fitted on the first part of the data and judged on data it did not see:

* calibration: the probability integral transform (PIT) of the held-out maximum under the
  predicted distribution of the maximum of the held-out length, G(z)^(L/m). For a
  calibrated method the PIT values are uniform on (0, 1); an inflated method puts them
  near 0 (the held-out maxima are smaller than predicted), a deflated one near 1. The
  uniformity is judged two-sided by the Kolmogorov-Smirnov test (scipy.stats.kstest);
* sharpness: the predicted median of the held-out maximum divided by the held-out
  maximum (median and quartiles): a method can only be calibrated and useless by being
  wide, which this shows;
* reliability: the binomial test (scipy.stats.binomtest) of the count of held-out blocks
  above the estimated level (the plug-in point estimate) against its probability. The
  point estimate ignores the uncertainty of the fitted parameters, so it is exceeded
  somewhat more often than its probability says (docs/performance.md measures by how
  much); the interval, not the point, is what a safety argument uses.

The method judged is the one behind an estimate (a GEV fitted by maximum likelihood to the
block maxima); METHODS also holds a deliberately inflated and a deliberately deflated
version of it, which the tests require to fail.

Peaks over a threshold (rtgauge/analysis/pwcet/pot.py) are judged the same way on series
of window maxima that are dependent with a known extremal index (dependent_cases): a
max-autoregressive process whose marginal is the maximum of m cycles of a known tail.
Their broken variant is the same fit without declustering (every exceedance its own
cluster: the extremal index taken as 1), which over-predicts the run's maximum.

Calibration only, so not part of the package: the shared part of scripts/pwcet_calibration.py
and scripts/pwcet_pot_calibration.py, which import it from beside them, as
tests/test_pwcet_calibration.py and tests/test_pwcet_pot.py do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from rtgauge.analysis.pwcet import pot
from rtgauge.analysis.pwcet import block_probability, fit_gev

# Multiplying every predicted level by these factors gives the broken methods.
METHODS = {"calibrated": 1.0, "inflated": 1.5, "deflated": 1 / 1.5}
ALPHA = 0.01


# Per-cycle distributions with a known tail: (upper quantile isf(p), draw of the maximum
# of k cycles by inverse transform of F^k, sf(x) per cycle). Values in µs-like units.
TAILS = {
    "bounded": (lambda p: 20 + 30 * (1 - p ** (1 / 3)),
                lambda rng, n, k: 20 + 30 * (1 - (-np.expm1(np.log(rng.random(n)) / k)) ** (1 / 3)),
                lambda x: np.clip(1 - (x - 20) / 30, 0, 1) ** 3),
    "exponential": (lambda p: 20 + 3 * -np.log(p),
                    lambda rng, n, k: 20 + 3 * -np.log(-np.expm1(np.log(rng.random(n)) / k)),
                    lambda x: np.exp(-np.maximum(x - 20, 0) / 3)),
    "heavy": (lambda p: 20 * p ** (-1 / 5),                     # Pareto index 5, ξ = 0.2
              lambda rng, n, k: 20 * (-np.expm1(np.log(rng.random(n)) / k)) ** (-1 / 5),
              lambda x: np.minimum((np.maximum(x, 20) / 20) ** -5, 1)),
}


def draw_mixture(rng, n: int, k: int, rate: float = 0.02, stall=(1000.0, 12000.0)) -> np.ndarray:
    """Block maxima of a quiet exponential regime plus rare bounded stalls: each block
    holds a stall with probability `rate`, uniform in `stall` (a VM's host stalls)."""
    quiet = TAILS["exponential"][1](rng, n, k)
    hit = rng.random(n) < rate
    return np.where(hit, np.maximum(quiet, rng.uniform(*stall, n)), quiet)


@dataclass
class Calibration:
    method: str
    cases: int
    pit: list[float]
    ks_p: float                   # two-sided uniformity of the PIT values
    sharpness_median: float       # predicted median of the held-out maximum / held-out maximum
    sharpness_q1: float
    sharpness_q3: float
    exceedances: int              # held-out blocks above the estimated level
    expected: float               # blocks × q
    binomial_p: float

    @property
    def passed(self) -> bool:
        """Calibrated: the PIT values of the held-out maxima are uniform (two-sided)."""
        return self.ks_p > ALPHA

    @property
    def reliable(self) -> bool:
        """The held-out count of blocks above the point estimate is compatible with its
        probability (binomial, two-sided)."""
        return self.binomial_p > ALPHA

    def row(self) -> dict:
        return {"method": self.method, "cases": self.cases, "ks_p": self.ks_p,
                "sharpness_median": self.sharpness_median, "sharpness_iqr": [self.sharpness_q1, self.sharpness_q3],
                "exceedances": self.exceedances, "expected": self.expected, "binomial_p": self.binomial_p,
                "passed": self.passed, "reliable": self.reliable}


def predicted_max_cdf(fit, z: float, blocks_ahead: float, factor: float = 1.0) -> float:
    """P(max of blocks_ahead blocks <= z) under the fit, every level multiplied by factor."""
    with np.errstate(all="ignore"):
        g = float(np.clip(fit.cdf(z / factor), 0.0, 1.0))
    return g ** blocks_ahead if g > 0 else 0.0


def predicted_max_median(fit, blocks_ahead: float, factor: float = 1.0) -> float:
    """Median of the maximum of blocks_ahead blocks under the fit: G^-1(2^(-1/k))."""
    q = -math.expm1(math.log(0.5) / blocks_ahead)       # the block-level exceedance with that median
    return factor * float(fit.isf(q))


def judge(fits_and_heldout: list[tuple], q: float, method: str) -> Calibration:
    """fits_and_heldout: (fit, held-out maximum, held-out blocks, held-out count above
    each level function) per case; q: the block probability of the level of the
    reliability test."""
    factor = METHODS[method]
    pit, sharp, count, expected = [], [], 0, 0.0
    for fit, held_max, blocks_ahead, count_above in fits_and_heldout:
        pit.append(predicted_max_cdf(fit, held_max, blocks_ahead, factor))
        sharp.append(predicted_max_median(fit, blocks_ahead, factor) / held_max)
        count += count_above(factor * float(fit.isf(q)))
        expected += blocks_ahead * q
    total = int(round(expected / q))
    bt = stats.binomtest(count, total, q)
    ks = stats.kstest(pit, "uniform")
    q1, med, q3 = np.quantile(sharp, [0.25, 0.5, 0.75])
    return Calibration(method, len(pit), pit, float(ks.pvalue), float(med), float(q1), float(q3), count, expected,
                       float(bt.pvalue))


def synthetic_cases(tail: str, cases: int, blocks: int, block_cycles: int, ahead: int, seed: int = 0) -> list[tuple]:
    """Fit `blocks` maxima of `block_cycles` cycles drawn from the tail; the held-out part
    is `ahead` times as long, its maximum drawn exactly, and its count of blocks above a
    level drawn from the exact binomial (so the held-out run need not be generated)."""
    rng = np.random.default_rng(seed)
    if tail == "mixture":
        draw = lambda n, k: draw_mixture(rng, n, k)                      # noqa: E731
        sf = None
    else:
        _, draw_max, sf = TAILS[tail]
        draw = lambda n, k: draw_max(rng, n, k)                           # noqa: E731
    out = []
    for _ in range(cases):
        x = draw(blocks, block_cycles)
        fit = fit_gev(x)
        n_ahead = blocks * ahead
        if sf is None:
            held = draw(n_ahead, block_cycles)
            held_max = float(held.max())
            count = (lambda h: lambda level: int(np.sum(h > level)))(held)
        else:
            held_max = float(draw(1, block_cycles * n_ahead)[0])

            def count(level, n=n_ahead):
                qb = block_probability(float(np.clip(sf(level), 1e-300, 1 - 1e-16)), block_cycles)
                return int(rng.binomial(n, qb))
        out.append((fit, held_max, n_ahead, count))
    return out


def real_cases(series: list[np.ndarray]) -> list[tuple]:
    """Each stored series of block maxima: the first half fitted, the second held out."""
    out = []
    for x in series:
        x = np.asarray(x, dtype=float)
        h = len(x) // 2
        fit = fit_gev(x[:h])
        held = x[h:]
        out.append((fit, float(held.max()), len(held), (lambda hh: lambda level: int(np.sum(hh > level)))(held)))
    return out


def real_pot_cases(series: list[np.ndarray], penalty: float = pot.SHAPE_PENALTY) -> list[tuple]:
    """Each stored series of window maxima: peaks over a threshold fitted to the first half
    (as the held-out check of the analysis does, at least pot.MIN_PEAKS_HALF cluster
    peaks), the second held out: its maximum and its count of clusters (upcrossings) above
    a level. Series whose first half has too few clusters are skipped. penalty: the fit's
    shape penalty (0: plain maximum likelihood)."""
    out = []
    for x in series:
        x = np.asarray(x, dtype=float)
        h = len(x) // 2
        try:
            fit = pot.fit_series(x[:h], pot.MIN_PEAKS_HALF, penalty)
        except ValueError:
            continue
        if fit is None:
            continue
        held = x[h:]
        out.append((fit, float(held.max()), len(held), (lambda hh: lambda level: upcrossings(hh, level))(held)))
    return out


# ---- dependent series: peaks over a threshold ------------------------------------------

# The window maximum's upper quantile at probability level v (its distribution G inverted):
# tails whose excesses over any threshold are exactly a GPD (exponential ξ = 0, bounded
# ξ = -1/3, Pareto ξ = 0.5), so that what is judged is the declustering and the extremal
# index, not how close a GPD is at a finite threshold. Values in µs-like units, as TAILS.
WINDOW_QUANTILE = {
    "exponential": lambda v: 20 + 3 * -np.log1p(-v),
    "bounded": lambda v: 20 + 30 * (1 - (1 - v) ** (1 / 3)),
    "heavy": lambda v: 20 * (1 - v) ** (-1 / 2),
}


def draw_dependent(rng, n: int, tail: str, theta: float) -> np.ndarray:
    """n window maxima whose marginal G is the tail's (WINDOW_QUANTILE), dependent with
    extremal index theta: a max-autoregressive process Y_t = max(a·Y_{t-1}, (1-a)·Z_t) of
    unit Fréchet Z (a = 1 - theta; Y is unit Fréchet, and the maximum of k consecutive
    values has the distribution G^(1 + (k-1)·theta)), mapped through G^-1(exp(-1/Y)).
    Late windows come in runs, as they do under a bursty load."""
    a = 1.0 - theta
    z = 1.0 / -np.log(rng.random(n))
    y = np.empty(n)
    y[0] = z[0]
    for i in range(1, n):
        y[i] = max(a * y[i - 1], (1 - a) * z[i])
    return WINDOW_QUANTILE[tail](np.exp(-1.0 / y))


def true_level(tail: str, theta: float, q: float) -> float:
    """The level whose exceedances come at rate q a window for the dependent series: a
    run of k windows stays below it with probability G^(θ·k) = (1-q)^k, so G = (1-q)^(1/θ)."""
    return float(WINDOW_QUANTILE[tail](np.exp(np.log1p(-q) / theta)))


def upcrossings(x: np.ndarray, level: float) -> int:
    """Windows above the level whose predecessor is not: the held-out count of
    independent events (clusters) above it."""
    above = x > level
    return int(above[0]) + int(np.sum(above[1:] & ~above[:-1]))


def dependent_cases(tail: str, cases: int, windows: int, ahead: int, theta: float = 0.4,
                    declustered: bool = True, seed: int = 0, penalty: float = pot.SHAPE_PENALTY) -> list[tuple]:
    """Peaks over a threshold fitted to `windows` dependent window maxima (extremal index
    theta); the next `ahead` times as many windows held out (their maximum, and their
    count of upcrossings of a level). declustered=False is the broken variant: the same
    threshold with every exceedance its own cluster (θ taken as 1). Cases where no
    threshold leaves enough cluster peaks are skipped (the analysis refuses them).
    penalty: the fit's shape penalty (pot.shape_penalty; 0: plain maximum
    likelihood, the method before its small-sample correction)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < cases:
        series = draw_dependent(rng, windows * (1 + ahead), tail, theta)
        x, held = series[:windows], series[windows:]
        try:
            fit = pot.fit_series(x, penalty=penalty)
        except ValueError:          # no converged fit: the analysis refuses (bad-fit)
            continue
        if fit is None:
            continue
        if not declustered:
            fit = pot.fit_at(x, fit.threshold, 1, theta=1.0, penalty=penalty)
        out.append((fit, float(held.max()), len(held), (lambda h: lambda level: upcrossings(h, level))(held)))
    return out


@dataclass
class TruthCalibration:
    """The level's likelihood-based confidence distribution judged at the true level: the
    PIT Φ(r), r the signed root of the likelihood ratio at the truth, is uniform for a
    calibrated interval at every confidence level at once (two-sided: too high an
    estimate puts the PIT values near 0, too low near 1), which the Kolmogorov-Smirnov
    test judges. Its weak side is the spread: an interval too narrow by a factor c makes
    r about c times too wide with its centre right, which a KS test from 40 cases
    hardly sees; so the mean of r² (1 when calibrated) is judged too, against its χ²
    distribution with one degree of freedom a case: too large (the interval too narrow,
    a safety defect) fails; too small (a conservative interval) is reported as the mean
    r² and the sharpness spread, not failed. Sharpness: the estimated level / the true
    level, median and its 10 % and 90 % quantiles."""
    method: str
    cases: int
    pit: list[float]
    ks_p: float
    low_share: float              # PIT < 0.025: the truth below the 95 % interval
    high_share: float             # PIT > 0.975: the truth above it
    sharpness_median: float       # estimated level / true level
    sharpness_low: float = math.nan     # its 10 % quantile
    sharpness_high: float = math.nan    # its 90 % quantile
    dispersion: float = math.nan        # mean of r² (r clipped to ±8)
    dispersion_p: float = math.nan      # P(χ²(cases) >= its sum): small when the interval is too narrow

    @property
    def passed(self) -> bool:
        return self.ks_p > ALPHA and self.dispersion_p > ALPHA

    def row(self) -> dict:
        return {"method": self.method, "cases": self.cases, "ks_p": self.ks_p, "below_interval": self.high_share,
                "above_interval": self.low_share, "sharpness_median": self.sharpness_median,
                "sharpness_10_90": (self.sharpness_low, self.sharpness_high), "mean_r2": self.dispersion,
                "mean_r2_p": self.dispersion_p, "passed": self.passed}


def signed_root(fit: pot.PotFit, q: float, level: float) -> float:
    """The signed root of the likelihood-ratio statistic of a level at cluster rate q:
    sign(level - estimate)·sqrt(2·(max log-likelihood - profile log-likelihood at the
    level)). About standard normal at the true level when the interval is calibrated, so
    Φ of it is a PIT of the truth (judge_truth judges its uniformity); -inf at or below
    the threshold. Calibration only, so it lives here beside its one user."""
    with pot.quiet():
        if level <= fit.threshold:
            return -math.inf
        zhat = float(fit.isf(q))
        b, lmax, profile = pot._profile(fit, q)
        d = max(0.0, lmax - profile((level - fit.threshold) / b))
        return math.copysign(math.sqrt(2 * d), level - zhat)


def judge_truth(fits: list, q: float, truth: float, method: str) -> TruthCalibration:
    """fits: PotFit per case; q: the cluster rate a window of the level; truth: the true
    level there. METHODS[method] multiplies every level (the estimate and the whole
    likelihood), i.e. the truth is judged at truth / factor."""
    factor = METHODS[method]
    r = np.clip([signed_root(f, q, truth / factor) for f in fits], -8.0, 8.0)
    pit = [float(v) for v in stats.norm.cdf(r)]
    sharp = [factor * float(f.isf(q)) / truth for f in fits]
    pit_a = np.asarray(pit)
    ss = float(np.sum(r ** 2))
    disp_p = float(stats.chi2.sf(ss, len(r)))
    lo, mid, hi = (float(v) for v in np.quantile(sharp, [0.1, 0.5, 0.9]))
    return TruthCalibration(method, len(pit), pit, float(stats.kstest(pit, "uniform").pvalue),
                            float(np.mean(pit_a < 0.025)), float(np.mean(pit_a > 0.975)), mid, lo, hi,
                            ss / len(r), disp_p)
