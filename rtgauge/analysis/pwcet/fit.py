"""The GEV fit of block maxima and what it gives: the parameters of the method (the
confidence, the checks' level, the evidence limit), the likelihood and its maximum, the
profile-likelihood intervals of a return level and of the shape, the tail's class, and
the smallest probability the data support."""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from rtgauge.analysis.pwcet import pot
from rtgauge.analysis.pwcet.pot import PotFit, nelder_mead_restarted, profile_bound


CONFIDENCE = 0.95
MIN_BLOCKS = 30
# Each applicability check fails when its p-value is at most this; three checks together
# wrongly refuse a sound series at most ~3 % of the time. With GOF_DRAWS = 99 the Monte
# Carlo goodness-of-fit test has exactly this size (the data's statistic above all draws).
ALPHA = 0.01
GOF_DRAWS = 99          # parametric bootstrap draws for the goodness-of-fit p-value
COMPARE_DRAWS = 200     # parametric bootstrap draws for compare_pwcet
CI_METHOD = "profile likelihood"
METHOD = "GEV on block maxima (maximum likelihood), profile-likelihood interval"
# An estimate is offered only within the evidence: a return period at most EXTRAPOLATION
# times the cycles observed (the distance over which docs/performance.md checks the
# calibration), and an interval that is bounded and spans at most MAX_SPAN (high / low).
EXTRAPOLATION = 1e4
MAX_SPAN = 10.0
# Mixture: the widest gap among the top fifth of the maxima, at least MIX_GAP in ratio,
# beyond which the bulk's own fitted tail gives the run less than MIX_ALPHA chance.
MIX_GAP = 2.0
MIX_ALPHA = 1e-3
# The stable reason codes of a refusal (JSON "code"; docs/pwcet.md says what each means
# and what to do).
CODES = ("too-few-maxima", "no-tail", "not-iid", "too-few-exceedances", "mixture", "bad-fit", "failed-validation",
         "heavy-tail", "beyond-evidence", "too-uncertain", "below-threshold")
POT_METHOD = pot.METHOD


@dataclass
class GevFit:
    """GEV parameters in the units of the data (ns). shape is ξ (the climate/EVT sign:
    ξ > 0 heavy tail, ξ = 0 Gumbel, ξ < 0 bounded); scipy's c is -ξ."""
    shape: float
    loc: float
    scale: float
    loglik: float

    @property
    def c(self) -> float:
        return -self.shape

    def isf(self, q) -> np.ndarray:
        return stats.genextreme.isf(q, self.c, self.loc, self.scale)

    def cdf(self, x) -> np.ndarray:
        return stats.genextreme.cdf(x, self.c, self.loc, self.scale)



def block_probability(p: float, m: int) -> float:
    """Probability that a block of m independent cycles holds at least one above the
    per-cycle level: 1 - (1-p)^m, computed without cancellation."""
    return float(-np.expm1(m * np.log1p(-p)))


def cycles_to_reach(p: float, chance: float) -> float:
    """Cycles n such that a run of n cycles exceeds the level with this chance."""
    return float(np.log1p(-chance) / np.log1p(-p))



@contextmanager
def _quiet():
    """Overflow and invalid-value warnings are expected while the optimiser probes
    parameters outside the support; they are handled (the likelihood is -inf there)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _standardise(x: np.ndarray) -> tuple[float, float]:
    """Location and scale that bring x near unit scale (GEV is a location-scale family,
    so fitting (x - a) / b and mapping back gives the same maximum)."""
    a = float(np.median(x))
    b = float(np.std(x)) or 1.0
    return a, b


def _loglik(z: np.ndarray, c: float, loc: float, scale: float) -> float:
    """GEV log-likelihood in scipy's parametrisation (c = -ξ); the same value as
    scipy.stats.genextreme.logpdf(z, c, loc, scale).sum() (tests/test_pwcet.py checks),
    written out because the profile likelihood evaluates it thousands of times and
    scipy's per-call overhead is 20 times the arithmetic."""
    if not scale > 0 or not np.isfinite(c) or abs(c) > 5:
        return -np.inf
    u = (z - loc) / scale
    if abs(c) < 1e-9:
        w = u
    else:
        t = -c * u
        if np.any(t <= -1):
            return -np.inf          # an observation outside the support
        w = -np.log1p(t) / c
    return float(-len(z) * math.log(scale) - (1 - c) * w.sum() - np.exp(-w).sum())


def _nll(z: np.ndarray, c: float, loc: float, scale: float) -> float:
    return -_loglik(z, c, loc, scale)


def _isf1(q: float, c: float) -> float:
    """Standard GEV upper quantile: scipy.stats.genextreme.isf(q, c), via Box-Cox."""
    return float(-special.boxcox(-math.log1p(-q), c))


def fit_gev(x) -> GevFit:
    """Maximum-likelihood GEV fit (scipy.stats.genextreme.fit), started from the Gumbel
    moment estimates of the standardised data."""
    with _quiet():
        return _fit_gev(np.asarray(x, dtype=float))


def _fit_gev(x: np.ndarray) -> GevFit:
    a, b = _standardise(x)
    z = (x - a) / b
    s0 = max(float(np.std(z)) * math.sqrt(6) / math.pi, 1e-6)
    l0 = float(np.mean(z)) - 0.5772 * s0
    best = None
    for c0 in (0.0, -0.3, 0.3):      # further starts only when the first fails
        c, loc, scale = stats.genextreme.fit(z, c0, loc=l0, scale=s0)
        nll = _nll(z, c, loc, scale)
        if best is None or nll < best[0]:
            best = (nll, c, loc, scale)
        if np.isfinite(best[0]):
            break
    nll, c, loc, scale = best
    if not np.isfinite(nll):
        raise ValueError("the GEV fit did not converge")
    return GevFit(shape=-float(c), loc=a + b * float(loc), scale=b * float(scale),
                  loglik=-nll - len(x) * math.log(b))


def refit(y: np.ndarray, start: GevFit) -> GevFit | None:
    """Maximum-likelihood refit of a bootstrap draw, started at the fit it was drawn from
    (scipy.optimize on the same likelihood as genextreme.fit; 10x faster warm-started)."""
    with _quiet():
        a, b = _standardise(y)
        z = (y - a) / b
        theta = (start.c, (start.loc - a) / b, math.log(start.scale / b))
        r = optimize.minimize(lambda t: _nll(z, t[0], t[1], math.exp(t[2])), theta, method="Nelder-Mead",
                              options={"xatol": 1e-3, "fatol": 1e-5, "maxfev": 2000})
        if not np.isfinite(r.fun):
            return None
        c, loc, log_s = r.x
        return GevFit(shape=-float(c), loc=a + b * float(loc), scale=b * math.exp(log_s),
                      loglik=-float(r.fun) - len(y) * math.log(b))


def _profile(z: np.ndarray, q: float, level: float, start: tuple[float, float]) -> tuple[float, tuple]:
    """Maximum log-likelihood of standardised z with the return level for block
    exceedance q held at `level`: loc follows from (level, c, scale)."""
    def nll(theta):
        c, log_s = theta
        s = math.exp(log_s)
        return _nll(z, c, level - s * _isf1(q, c), s)
    best = nelder_mead_restarted(nll, start, 0.05, 1e-3, 400, start[1])
    return -float(best.fun), tuple(best.x)


def return_level(fit: GevFit, x, q: float, confidence: float = CONFIDENCE) -> tuple[float, float, float | None]:
    """(level, low, high) of the return level for block exceedance q, the interval by
    profile likelihood: every level whose profile log-likelihood is within
    chi2(1, confidence)/2 of the maximum. high is None when the data do not bound it.
    A PotFit (peaks over a threshold) gives its own level at cluster rate q (x unused)."""
    if isinstance(fit, PotFit):
        return pot.return_level(fit, q, confidence)
    with _quiet():
        return _return_level(fit, np.asarray(x, dtype=float), q, confidence)


def _return_level(fit: GevFit, x: np.ndarray, q: float, confidence: float) -> tuple[float, float, float | None]:
    a, b = _standardise(x)
    z = (x - a) / b
    c, loc, scale = fit.c, (fit.loc - a) / b, fit.scale / b
    zhat = float(stats.genextreme.isf(q, c, loc, scale))
    lmax = -_nll(z, c, loc, scale)
    cut = lmax - stats.chi2.ppf(confidence, 1) / 2
    start0 = (c, math.log(scale))
    cache: dict[float, tuple] = {}
    values: dict[float, float] = {}

    def g(level):
        if level in values:
            return values[level]
        nearest = min(cache, key=lambda k: abs(k - level)) if cache else None
        ll, th = _profile(z, q, level, cache[nearest] if nearest is not None else start0)
        if np.isfinite(ll):
            cache[level] = th
        values[level] = max(ll - cut, -1e6)   # an impossible level (data outside the support) is far below
        return values[level]

    width = max(abs(zhat - loc), scale)

    def bound(direction: int) -> float | None:
        inner = zhat
        step = 0.05 * width
        for _ in range(40):
            outer = zhat + direction * step
            if g(outer) < 0 < g(inner):
                return optimize.brentq(g, min(inner, outer), max(inner, outer), xtol=2e-3 * width, rtol=1e-4)
            inner = outer
            step *= 2.5
            if step > 1e6 * width:
                break
        return None

    high = bound(+1)
    low = bound(-1)
    tr = lambda v: None if v is None else a + b * v   # noqa: E731
    return a + b * zhat, (tr(low) if low is not None else float(np.min(x))), tr(high)



def shape_interval(fit: GevFit, x, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """95 % profile-likelihood interval of the GEV shape ξ: every ξ whose log-likelihood,
    maximised over location and scale, is within chi2(1, confidence)/2 of the maximum.
    A side is None when the data do not bound it (|ξ| up to 5 searched)."""
    with _quiet():
        x = np.asarray(x, dtype=float)
        a, b = _standardise(x)
        z = (x - a) / b
        loc0, ls0 = (fit.loc - a) / b, math.log(fit.scale / b)
        lmax = -_nll(z, fit.c, loc0, math.exp(ls0))
        cut = lmax - stats.chi2.ppf(confidence, 1) / 2
        starts: dict[float, tuple] = {fit.c: (loc0, ls0)}

        def g(c: float) -> float:
            near = min(starts, key=lambda k: abs(k - c))
            r = optimize.minimize(lambda t: _nll(z, c, t[0], math.exp(t[1])), starts[near], method="Nelder-Mead",
                                  options={"xatol": 1e-4, "fatol": 1e-4, "maxfev": 600})
            if np.isfinite(r.fun):
                starts[c] = tuple(r.x)
            return max(-float(r.fun) - cut, -1e6)

        c_high, c_low = profile_bound(g, fit.c, +1), profile_bound(g, fit.c, -1)     # ξ = -c: a high c is a low ξ
        return (None if c_high is None else -c_high), (None if c_low is None else -c_low)


def tail_class(low: float | None, high: float | None) -> str:
    """bounded (ξ < 0 with 95 % confidence), heavy (ξ > 0 with 95 % confidence) or
    exponential (the interval holds 0: an exponential tail cannot be ruled out)."""
    if low is not None and low > 0:
        return "heavy"
    if high is not None and high < 0:
        return "bounded"
    return "exponential"


def evidence_limit(blocks: int, block_cycles: int) -> float:
    """The smallest per-cycle probability the evidence supports: a return period at most
    EXTRAPOLATION times the cycles observed."""
    return 1.0 / (blocks * block_cycles * EXTRAPOLATION)


def cycles_needed(exceedance: float, block_cycles: int) -> float:
    """Cycles a run must observe for the evidence limit to reach this probability (and at
    least MIN_BLOCKS blocks)."""
    return max(1.0 / (exceedance * EXTRAPOLATION), MIN_BLOCKS * block_cycles)


def _level_at(fit: GevFit, x: np.ndarray, p: float, m: int) -> tuple[float, float, float | None, str | None]:
    """(level, low, high, why not credible) at per-cycle p: too-uncertain when the
    interval is unbounded or spans more than MAX_SPAN."""
    level, low, high = return_level(fit, x, block_probability(p, m))
    if high is None or not low > 0 or high / low > MAX_SPAN:
        return level, low, high, "too-uncertain"
    return level, low, high, None


def supported_level(fit: GevFit, x: np.ndarray, p: float, m: int,
                    extrapolation: float = EXTRAPOLATION) -> tuple[float, float, float, float] | None:
    """(p', level, low, high) at the smallest per-cycle probability p' >= p that is within
    the evidence limit and whose interval is bounded and spans at most MAX_SPAN; found by
    bisection in log p between that limit and the data's own range (1 / cycles). None
    when even the data's own range is not credible."""
    n = len(x)
    p_hi = 1.0 / (n * m)
    p_lo = max(p, p_hi / extrapolation)
    if p_lo >= p_hi:
        p_lo = p_hi
    level, low, high, why = _level_at(fit, x, p_lo, m)
    if why is None:
        return p_lo, level, low, high
    level, low, high, why = _level_at(fit, x, p_hi, m)
    if why is not None:
        return None
    best = (p_hi, level, low, high)
    a, b = math.log10(p_lo), math.log10(p_hi)      # a fails, b holds
    for _ in range(5):
        mid = (a + b) / 2
        level, low, high, why = _level_at(fit, x, 10 ** mid, m)
        if why is None:
            b, best = mid, (10 ** mid, level, low, high)
        else:
            a = mid
    return best
