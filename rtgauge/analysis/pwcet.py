"""The probable worst-case latency (pWCET) from extreme value theory.

Block maxima (the engine's per-window maxima `ti_window_max`, or raw samples cut into
blocks of cycles) are fitted with a generalised extreme value (GEV) distribution by
maximum likelihood (scipy.stats.genextreme). The latency exceeded with probability p
per cycle is the block-level return level for q = 1 - (1 - p)^m, m cycles a block,
with a 95 % profile-likelihood interval. Before the number, the conditions that make
it meaningful are tested; when one fails the result says "not applicable because ..."
instead of a number. docs/pwcet.md explains the method and how to read the result.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import stat
import struct
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats

from rtgauge.analysis import pwcet_pot as pot
from rtgauge.analysis.autocorr import acf, ljung_box
from rtgauge.analysis.pwcet_pot import PotFit, nelder_mead_restarted, profile_bound
from rtgauge.records import Measurement
from rtgauge.defaults import DEFAULT_EXCEEDANCE
from rtgauge.errors import UserError

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


# ---- result types -----------------------------------------------------------

@dataclass
class Check:
    """One applicability condition and the test that checked it."""
    name: str            # independence, identical distribution, goodness of fit, enough blocks
    test: str
    statistic: float | None
    p_value: float | None
    passed: bool | None   # None: not tested (an earlier check already failed)
    detail: str

    def to_json(self) -> dict:
        return asdict(self)


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


@dataclass
class Pwcet:
    """The probable worst case of one series of block maxima."""
    label: str                      # "all threads", "thread 0", ...
    source: str                     # "ti_window_max", "samples"
    exceedance: float               # p, per cycle
    block_cycles: int               # m
    interval_ns: int | None         # cycle period, when known
    blocks: int                     # n block maxima used
    observed_max_ns: float | None
    applicable: bool
    reason: str | None              # why not applicable
    checks: list[Check] = field(default_factory=list)
    fit: GevFit | PotFit | None = None    # a PotFit when peaks over a threshold answered
    level_ns: float | None = None
    ci_low_ns: float | None = None
    ci_high_ns: float | None = None   # None with an applicable result: not bounded by the data
    confidence: float = CONFIDENCE
    ci_method: str = CI_METHOD
    maxima_ns: list[float] = field(default_factory=list, repr=False)
    code: str | None = None           # the stable reason code of a refusal (CODES)
    tail: str | None = None           # bounded, exponential, heavy (from the shape's interval)
    shape_low: float | None = None    # 95 % profile-likelihood interval of ξ (None: unbounded)
    shape_high: float | None = None
    mixture: dict | None = None       # the two regimes, when the code is "mixture"
    supported_exceedance: float | None = None   # the smallest p the data support, and the level there
    supported_level_ns: float | None = None
    supported_low_ns: float | None = None
    supported_high_ns: float | None = None
    cycles_needed: float | None = None          # cycles a run needs for the evidence to reach p
    method: str = METHOD                        # METHOD (GEV on block maxima) or POT_METHOD

    @property
    def by_pot(self) -> bool:
        """Whether peaks over a threshold answered (the block maxima were dependent)."""
        return self.method == POT_METHOD

    @property
    def block_exceedance(self) -> float:
        return block_probability(self.exceedance, self.block_cycles)

    @property
    def return_period_s(self) -> float | None:
        """Mean time between cycles above the level at this rate: interval / p."""
        return None if not self.interval_ns else self.interval_ns * 1e-9 / self.exceedance

    @property
    def run_to_reach_s(self) -> float | None:
        """How long a run must be for its observed maximum to reach the level with
        probability 1/2: n cycles with 1 - (1-p)^n = 1/2."""
        if not self.interval_ns:
            return None
        return cycles_to_reach(self.exceedance, 0.5) * self.interval_ns * 1e-9

    @property
    def observed_s(self) -> float | None:
        return None if not self.interval_ns else self.blocks * self.block_cycles * self.interval_ns * 1e-9

    def rate_text(self) -> str:
        s = self.return_period_s
        if s is None:
            return f"once in {1 / self.exceedance:,.3g} cycles"
        return f"about {once_per(s)} at this rate"

    @property
    def run_needed_s(self) -> float | None:
        """How long a run must be (at least) for the evidence to reach the requested p."""
        return None if not self.interval_ns or self.cycles_needed is None else self.cycles_needed * self.interval_ns * 1e-9

    @property
    def length_helps(self) -> bool:
        """Whether a longer run is the remedy: not for an estimate already given, nor for
        a refusal a longer run would not cure (a heavy tail, a mixture, bursts or drift,
        no tail)."""
        return not self.applicable and self.code not in ("heavy-tail", "mixture", "not-iid", "no-tail",
                                                         "below-threshold")

    @property
    def method_text(self) -> str:
        return " (peaks over a threshold, declustered)" if self.by_pot else ""

    @property
    def past_needed(self) -> bool:
        """Whether this run is already as long as the evidence limit asks (a too-uncertain
        answer): then only "longer than this run" can be said, not a length."""
        s, obs = self.run_needed_s, self.observed_s
        return s is not None and obs is not None and s <= obs

    def needed_text(self) -> str:
        s = self.run_needed_s
        if self.past_needed:
            return (f"this run ({duration_text(self.observed_s)}) is past the evidence limit for "
                    f"p={self.exceedance:g}; a longer one narrows the interval")
        n = f"{self.cycles_needed:,.0f} cycles" if s is None else duration_text(s)
        return f"a run of at least {n} is needed for p={self.exceedance:g}"

    def needed_label(self) -> str:
        """The run the requested p needs, for a table cell: "-" where a longer run is not
        the remedy (or the interval is not known). Always a floor ("at least", "longer
        than"): the distance rule is necessary, not sufficient; a run that long still has
        to pass every check and narrow its interval to MAX_SPAN, which no length promises."""
        if not self.length_helps or self.run_needed_s is None:
            return "-"
        if self.past_needed:
            return f"longer than {duration_text(self.observed_s)}"
        return f"at least {duration_text(self.run_needed_s)}"

    def summary(self) -> str:
        """One line: the observed maximum, then the level with its interval, or why there
        is none (with its code) and how long a run would need to be."""
        seen = "" if self.observed_max_ns is None else f"observed max {self.observed_max_ns / 1000:,.1f} µs; "
        if not self.applicable:
            text = f"{seen}no estimate at p={self.exceedance:g} [{self.code}]{self.method_text}: {self.reason}"
            if self.length_helps:
                text += f"; {self.needed_text()}"
            return text
        high = "unbounded" if self.ci_high_ns is None else f"{self.ci_high_ns / 1000:,.1f}"
        text = (f"{seen}{self.level_ns / 1000:,.1f} µs (95% CI {self.ci_low_ns / 1000:,.1f}–{high} µs) "
                f"exceeded with p={self.exceedance:g} per cycle{self.method_text}, {self.rate_text()}")
        if self.run_to_reach_s is not None:
            text += f"; a run would need about {duration_text(self.run_to_reach_s)} to observe it"
        return text

    def to_json(self) -> dict:
        return {
            "label": self.label, "source": self.source, "exceedance": self.exceedance,
            "block_cycles": self.block_cycles, "block_exceedance": self.block_exceedance,
            "interval_ns": self.interval_ns, "blocks": self.blocks,
            "observed_max_ns": self.observed_max_ns, "observed_s": self.observed_s,
            "applicable": self.applicable, "reason": self.reason,
            "checks": [c.to_json() for c in self.checks],
            "fit": None if self.fit is None else (self.fit.to_json() if isinstance(self.fit, PotFit) else {
                "distribution": "GEV", "method": "maximum likelihood", **asdict(self.fit)}),
            "level_ns": self.level_ns, "ci_low_ns": self.ci_low_ns, "ci_high_ns": self.ci_high_ns,
            "confidence": self.confidence, "ci_method": self.ci_method,
            "return_period_s": self.return_period_s, "run_to_reach_s": self.run_to_reach_s,
            "method": self.method,
            "code": self.code,
            "estimate": None if not self.applicable else {
                "exceedance": self.exceedance, "level_ns": self.level_ns, "ci_low_ns": self.ci_low_ns,
                "ci_high_ns": self.ci_high_ns},
            "tail": None if self.tail is None else {"class": self.tail, "shape": self.fit.shape,
                                                    "shape_ci_low": self.shape_low, "shape_ci_high": self.shape_high},
            "supported": None if self.supported_exceedance is None else {
                "exceedance": self.supported_exceedance, "level_ns": self.supported_level_ns,
                "ci_low_ns": self.supported_low_ns, "ci_high_ns": self.supported_high_ns},
            "mixture": self.mixture,
            "evidence_limit": None if not self.blocks else evidence_limit(self.blocks, self.block_cycles),
            "cycles_needed": self.cycles_needed, "run_needed_s": self.run_needed_s,
            "summary": self.summary(),
        }


# ---- small conversions --------------------------------------------------------

def block_probability(p: float, m: int) -> float:
    """Probability that a block of m independent cycles holds at least one above the
    per-cycle level: 1 - (1-p)^m, computed without cancellation."""
    return float(-np.expm1(m * np.log1p(-p)))


def cycles_to_reach(p: float, chance: float) -> float:
    """Cycles n such that a run of n cycles exceeds the level with this chance."""
    return float(np.log1p(-chance) / np.log1p(-p))


UNITS = (("year", 365.25 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def duration_text(seconds: float) -> str:
    for name, size in UNITS:
        if seconds >= size:
            v = seconds / size
            return f"{v:,.3g} {name}{'s' if v >= 1.5 else ''}"
    return f"{seconds * 1000:.3g} ms"


def once_per(seconds: float) -> str:
    """'once per 11.6 days', 'once per hour'."""
    for name, size in UNITS:
        if seconds >= size:
            v = seconds / size
            return f"once per {name}" if 0.95 <= v < 1.05 else f"once per {v:,.3g} {name}s"
    return f"once per {seconds * 1000:.3g} ms"


# ---- fitting ------------------------------------------------------------------

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


# ---- applicability checks ----------------------------------------------------------

def check_independence(x: np.ndarray) -> Check:
    """Ljung-Box portmanteau test (analysis/autocorr.py) on the ranks of the series
    (ranks: one huge maximum must not dominate the autocorrelations), min(10, n/5) lags."""
    n = len(x)
    lags = max(1, min(10, n // 5))
    r = stats.rankdata(x)
    if np.ptp(r) == 0:
        return Check("independence", f"Ljung-Box on ranks, {lags} lags", None, None, False,
                     "all block maxima are equal")
    q, p = ljung_box(r, lags)
    ac = acf(r, lags)[1:]
    worst = int(np.argmax(np.abs(ac))) + 1
    return Check("independence", f"Ljung-Box on ranks, {lags} lags", q, p, bool(p > ALPHA),
                 f"largest autocorrelation {ac[worst - 1]:+.2f} at lag {worst}")


def check_identical(x: np.ndarray) -> Check:
    """Two-sample Kolmogorov-Smirnov test between the first and second half."""
    h = len(x) // 2
    first, second = x[:h], x[h:]
    r = stats.ks_2samp(first, second)
    return Check("identical distribution", "two-sample Kolmogorov-Smirnov, first vs second half",
                 float(r.statistic), float(r.pvalue), bool(r.pvalue > ALPHA),
                 f"median {np.median(first) / 1000:,.1f} µs then {np.median(second) / 1000:,.1f} µs")


def _ad(x_sorted: np.ndarray, fit_cdf) -> float:
    """Anderson-Darling statistic of sorted data against a fitted cdf; the value of
    scipy.stats.goodness_of_fit(..., statistic="ad") with every parameter given (the
    test holds them equal), without its Monte Carlo, which would refit by the slow path."""
    u = np.clip(fit_cdf(x_sorted), 1e-12, 1 - 1e-12)
    n = len(u)
    i = np.arange(1, n + 1)
    return float(-n - np.mean((2 * i - 1) * (np.log(u) + np.log1p(-u[::-1]))))


def check_fit(x: np.ndarray, fit: GevFit, draws: int = GOF_DRAWS, seed: int = 0) -> Check:
    """Anderson-Darling distance between the data and the fitted GEV; its p-value by
    parametric bootstrap (draw from the fit, refit, recompute), because the parameters
    were estimated from the same data."""
    xs = np.sort(x)
    a2 = _ad(xs, fit.cdf)
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(draws):
        y = np.sort(stats.genextreme.rvs(fit.c, fit.loc, fit.scale, size=len(x), random_state=rng))
        f = refit(y, fit)
        if f is not None:
            null.append(_ad(y, f.cdf))
    p = (1 + sum(v >= a2 for v in null)) / (1 + len(null))
    return Check("goodness of fit", f"Anderson-Darling against the fitted GEV, {len(null)} bootstrap draws",
                 a2, float(p), bool(p > ALPHA), f"shape ξ={fit.shape:+.2f}")


# ---- the analysis ---------------------------------------------------------------

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


def find_mixture(x: np.ndarray) -> dict | None:
    """Two regimes among the block maxima: a bulk and a few far larger ones (on a VM, the
    windows where the host stalled the guest). The split is the widest gap (in log
    scale, at least a factor MIX_GAP) among the top fifth of the sorted maxima; it is a
    mixture when a GEV fitted to the maxima below the gap gives the n blocks less than
    MIX_ALPHA chance of reaching the first value above it, i.e. the bulk's own tail
    cannot produce the large ones. None when there is no such split."""
    xs = np.sort(x)
    n = len(xs)
    top = max(1, n // 5)
    lg = np.log(np.maximum(xs, 1.0))
    first = n - 1 - top
    gaps = np.diff(lg)[first:]
    i = int(np.argmax(gaps)) + first          # xs[i] is the bulk's largest, xs[i + 1] the rare regime's smallest
    if lg[i + 1] - lg[i] < math.log(MIX_GAP) or i + 1 < MIN_BLOCKS:
        return None
    lower = xs[: i + 1]
    try:
        bulk = fit_gev(lower)
    except ValueError:
        return None
    with _quiet():
        chance = float(-np.expm1(n * np.log(np.clip(bulk.cdf(xs[i + 1]), 1e-300, 1.0))))
    if chance >= MIX_ALPHA:
        return None
    k = n - 1 - i
    return {"bulk_blocks": i + 1, "bulk_max_ns": float(xs[i]), "bulk_shape": bulk.shape,
            "rare_blocks": k, "rare_min_ns": float(xs[i + 1]), "rare_max_ns": float(xs[-1]),
            "chance": chance}


def holdout_check(x: np.ndarray) -> Check:
    """The analysis judged on data it did not see: a GEV fitted to the first half of the
    maxima predicts the distribution of the largest of the second half (G(z)^n2); its
    probability integral transform (PIT) must not be in either 0.5 % tail unless a fit
    within the first half's 95 % profile-likelihood region would put it there (the
    plug-in fit alone is overconfident: a bounded tail's fitted end is often just below
    the next maximum). A fit that is too light (a later stall far beyond it) or too heavy
    (a later half far below) fails."""
    h = len(x) // 2
    if h < MIN_BLOCKS:
        return Check("held-out maximum", "PIT of the second half's maximum under the first half's fit", None, None,
                     None, f"not tested: {h} block maxima a half (at least {MIN_BLOCKS} needed)")
    try:
        f = fit_gev(x[:h])
    except ValueError:
        return Check("held-out maximum", "PIT of the second half's maximum under the first half's fit", None, None,
                     False, "the fit of the first half did not converge")
    return _judge_holdout(f, x[:h], x[h:])


def _judge_holdout(f, first: np.ndarray, second: np.ndarray) -> Check:
    """PIT of the second part's maximum under the first part's fit f (GevFit or PotFit:
    its cdf to the power of the windows held out), failing only beyond the first part's
    95 % profile-likelihood region."""
    n2, held = len(second), float(np.max(second))
    with _quiet():
        pit = float(np.clip(f.cdf(held), 0.0, 1.0) ** n2)
    detail = f"second half's maximum {held / 1000:,.1f} µs at PIT {pit:.3g}"
    ok = True
    # an extreme PIT fails only when no fit within the 95 % confidence region of the first
    # half's parameters reaches it either: the level the n2 blocks' maximum exceeds with
    # probability α/2 (or stays under), at the far end of its profile-likelihood interval
    if pit >= 1 - ALPHA / 2:
        _, _, high = return_level(f, first, -math.expm1(math.log1p(-ALPHA / 2) / n2))
        ok = high is None or held <= high
        detail += "" if ok else f", above {high / 1000:,.1f} µs, the highest level the first half allows"
    elif pit <= ALPHA / 2:
        _, low, _ = return_level(f, first, -math.expm1(math.log(ALPHA / 2) / n2))
        ok = held >= low
        detail += "" if ok else f", below {low / 1000:,.1f} µs, the lowest level the first half allows"
    return Check("held-out maximum", "PIT of the second half's maximum under the first half's fit, two-sided, "
                 "beyond its 95% profile-likelihood region", pit, pit, bool(ok), detail)


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
    declustering (rtgauge/analysis/pwcet_pot.py), which answer only when the declustered
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


def check_cluster_rate(fit: PotFit) -> Check:
    """Are the clusters as frequent in the first half of the windows as in the second?
    Two-sided binomial test (scipy.stats.binomtest) of the clusters whose peak is in the
    first half."""
    n = fit.windows
    h = n // 2
    first = int(np.sum(fit.peak_positions < h))
    r = stats.binomtest(first, fit.clusters, h / n)
    return Check("constant cluster rate", "binomial test of the clusters in the first half", first,
                 float(r.pvalue), bool(r.pvalue > ALPHA), f"{first} of {fit.clusters} clusters in the first half")


def holdout_check_pot(x: np.ndarray, threshold: float) -> Check:
    """The held-out check of peaks over a threshold: the first half's windows, declustered
    and fitted at the same threshold, predict the distribution of the second half's
    maximum, exp(-n2·λ·S(z - u)); judged as holdout_check judges the GEV's."""
    name, test = "held-out maximum", "PIT of the second half's maximum under the first half's fit"
    h = len(x) // 2
    try:
        f = pot.fit_at(x[:h], threshold, pot.MIN_PEAKS_HALF)
    except ValueError:
        return Check(name, test, None, None, False, "the fit of the first half did not converge")
    if f is None:
        return Check(name, test, None, None, None,
                     f"not tested: fewer than {pot.MIN_PEAKS_HALF} cluster peaks in the first half")
    return _judge_holdout(f, x[:h], x[h:])


def _num(v: float | None) -> str:
    return "unbounded" if v is None else f"{v:+.2f}"


def _failed_text(failed: list[Check], what: str = "block maxima") -> str:
    return "; ".join(f"the {what} fail the {c.name} check ({c.test}: p={c.p_value:.2g}; {c.detail})"
                     if c.p_value is not None else f"{c.name}: {c.detail}" for c in failed)


# ---- stored measurements ---------------------------------------------------------

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
    interval_us = m.params.get("interval_us")
    if not series or not series.window_ns or not interval_us:
        return None
    interval_ns = int(round(float(interval_us) * 1000))
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


# ---- raw samples -------------------------------------------------------------------

BINARY_MAGIC = b"RTGSAMP1"
# the largest samples file read (docs/samples.md): 1 GiB binary is 22 million records;
# CSV is parsed at ~10x its size, so its bound is lower. Host memory stays bounded.
SAMPLES_BINARY_MAX = 1024**3
SAMPLES_CSV_MAX = 256 * 1024**2
BLOCKS_MAX = 10**7
BINARY_DTYPE = np.dtype([("thread", "<u4"), ("reserved", "<u4"), ("cycle", "<u8"), ("deadline_ns", "<i8"),
                         ("ti", "<i8"), ("ts", "<i8"), ("tw", "<i8")])


def read_samples(path: str) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{thread: (cycle, deadline_ns, ti_ns)} from a docs/samples.md file (CSV or binary)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)    # a FIFO must not block the open
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            raise UserError(f"{path} is not a regular file; give a samples file (docs/samples.md), not a "
                            "device or a pipe.")
        with os.fdopen(fd, "rb") as f:
            head = f.read(16)
            limit = SAMPLES_BINARY_MAX if head[:8] == BINARY_MAGIC else SAMPLES_CSV_MAX
            if info.st_size > limit:
                raise UserError(f"{path} is {info.st_size / 1024**2:,.0f} MiB, more than rtgauge reads as samples "
                                f"({limit // 1024**2:,} MiB); give a shorter run's samples.")
            if head[:8] == BINARY_MAGIC:
                size = struct.unpack_from("<I", head, 8)[0] if len(head) >= 12 else 0
                if size != BINARY_DTYPE.itemsize:
                    raise UserError(f"{path} has {size}-byte records; this rtgauge reads the 48-byte "
                                    "records of docs/samples.md.")
                partial = (info.st_size - 16) % size if info.st_size >= 16 else 0
                if partial:
                    raise UserError(f"{path} ends inside a record ({partial} of {size} bytes): it was cut "
                                    "short; give the whole file.")
                data = np.fromfile(f, dtype=BINARY_DTYPE, count=(info.st_size - 16) // size)
                cols = (data["thread"], data["cycle"], data["deadline_ns"], data["ti"])
            else:
                f.seek(0)
                header = f.readline().decode("utf-8", "replace").strip()
                if header != "thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns":
                    raise UserError(f"{path} is not an rtgauge samples file (docs/samples.md): it starts with "
                                    f"{header[:40]!r} instead of the CSV header or RTGSAMP1.")
                try:
                    arr = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
                except ValueError as e:
                    raise UserError(f"{path} has a malformed line ({str(e).splitlines()[0]}); "
                                    "each line must hold six integers.") from None
                if arr.size == 0:
                    arr = np.empty((0, 6), dtype=np.int64)
                if arr.shape[1] != 6:
                    raise UserError(f"{path} has {arr.shape[1]} columns a line; docs/samples.md has six.")
                cols = (arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])
    except FileNotFoundError:
        raise UserError(f"no samples file {path}; write one with `rtgauge-engine latency --samples FILE`.") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory; give a samples file.") from None
    except PermissionError:
        raise UserError(f"cannot read {path}: permission denied.") from None
    thread, cycle, deadline, ti = cols
    if len(thread) == 0:
        raise UserError(f"{path} holds no samples; run `rtgauge-engine latency --samples FILE` for longer.")
    out = {}
    for t in np.unique(thread):
        sel = thread == t
        order = np.argsort(cycle[sel], kind="stable")
        out[int(t)] = (cycle[sel][order].astype(np.int64), deadline[sel][order].astype(np.int64),
                       ti[sel][order].astype(np.int64))
    return out


def default_block(cycles: int) -> int:
    """Cycles a block when not given: 1000 (one second at 1 kHz), fewer for short runs so
    that there are about 100 blocks, never under 10."""
    return int(max(10, min(1000, cycles // 100)))


def samples_pwcet(path: str, exceedance: float = DEFAULT_EXCEEDANCE, block_cycles: int | None = None,
                  gof_draws: int = GOF_DRAWS) -> list[Pwcet]:
    """pWCET of a raw samples file: all threads together (the largest Ti of each cycle),
    then each thread. Blocks are runs of consecutive cycle numbers."""
    per_thread = read_samples(path)
    interval = None
    diffs = [np.diff(d) for _, d, _ in per_thread.values() if len(d) > 1]
    steps = [np.diff(c) for c, _, _ in per_thread.values() if len(c) > 1]
    if diffs:
        d, s = np.concatenate(diffs), np.concatenate(steps)
        ok = s > 0
        if ok.any():
            interval = int(round(float(np.median(d[ok] / s[ok]))))
    longest = max(int(c[-1]) + 1 for c, _, _ in per_thread.values())
    if min(int(c[0]) for c, _, _ in per_thread.values()) < 0:
        raise UserError(f"{path} has a negative cycle number; it is not an rtgauge samples file.")
    block = block_cycles or default_block(longest)
    if block < 1:
        raise UserError(f"a block must hold at least one cycle (got {block}).")
    if longest // block > BLOCKS_MAX:
        raise UserError(f"{path} numbers its cycles up to {longest - 1:,}, which makes more than {BLOCKS_MAX:,} "
                        "blocks; give a larger --block-cycles or the engine's own samples file.")

    def maxima(cycle, ti):
        # the maximum per block of cycle numbers; blocks with no sample (all skipped) are left out
        idx = cycle // block
        full = int(longest // block)
        keep = idx < full
        out = np.full(full, -np.inf)
        np.maximum.at(out, idx[keep], ti[keep].astype(float))
        return [v for v in out if np.isfinite(v)]

    cyc_all = np.concatenate([c for c, _, _ in per_thread.values()])
    ti_all = np.concatenate([t for _, _, t in per_thread.values()])
    def top(ti):
        return float(ti.max()) if len(ti) else None

    results = [seen_max(analyse(maxima(cyc_all, ti_all), block, exceedance, interval, "all threads", "samples",
                                gof_draws), top(ti_all))]
    if len(per_thread) > 1:
        for t, (c, _, ti) in per_thread.items():
            results.append(seen_max(analyse(maxima(c, ti), block, exceedance, interval, f"thread {t}", "samples",
                                            gof_draws), top(ti)))
    return results


# ---- comparing two systems -----------------------------------------------------------

def _bootstrap_levels(r: Pwcet, draws: int, rng) -> np.ndarray:
    x = np.asarray(r.maxima_ns, dtype=float)
    q = r.block_exceedance
    if isinstance(r.fit, PotFit):
        return pot.draw_levels(r.fit, q, draws, rng)
    out = []
    for _ in range(draws):
        y = stats.genextreme.rvs(r.fit.c, r.fit.loc, r.fit.scale, size=len(x), random_state=rng)
        f = refit(y, r.fit)
        if f is not None:
            out.append(float(f.isf(q)))
    return np.asarray(out)


def compare_pwcet(meas_a: Measurement | Pwcet, meas_b: Measurement | Pwcet, exceedance: float = DEFAULT_EXCEEDANCE, draws: int = COMPARE_DRAWS,
                  seed: int = 0, gof_draws: int = GOF_DRAWS) -> dict:
    """Is B's probable worst case significantly different from A's? meas_a/meas_b are
    stored measurements or Pwcet results. The difference B - A of the levels at
    the same per-cycle exceedance gets a parametric-bootstrap interval (each side
    redrawn from its own fit and refitted, the draws paired at random); the call is
    'worse' when the whole interval is above 0, 'better' when below, otherwise 'no
    significant difference'. p_value is the two-sided bootstrap p-value of no difference
    (twice the share of bootstrap differences on the far side of 0)."""
    ra, rb = (_as_pwcet(m, exceedance, gof_draws) for m in (meas_a, meas_b))
    out = {"a": ra.to_json(), "b": rb.to_json(), "exceedance": exceedance, "confidence": CONFIDENCE,
           "method": f"parametric bootstrap of the difference, {draws} draws a side"}
    if not (ra.applicable and rb.applicable):
        which = [f"{side}: {r.reason}" for side, r in (("A", ra), ("B", rb)) if not r.applicable]
        out.update(call="not applicable", verdict="not applicable", reason="; ".join(which), difference_ns=None, ci_low_ns=None,
                   ci_high_ns=None, p_value=None)
        return out
    rng = np.random.default_rng(seed)
    la, lb = _bootstrap_levels(ra, draws, rng), _bootstrap_levels(rb, draws, rng)
    n = min(len(la), len(lb))
    diff = lb[:n] - la[:n]
    alpha = 1 - CONFIDENCE
    # percentile interval of the bootstrap differences: the levels' sampling distributions
    # are skewed to the right (as the profile-likelihood intervals are), which a reflected
    # interval would turn the wrong way
    d0 = rb.level_ns - ra.level_ns
    low, high = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
    # two-sided p-value of "no difference": how much of the bootstrap distribution lies
    # on the other side of 0
    p = float(min(1.0, 2 * (1 + min(np.sum(diff <= 0), np.sum(diff >= 0))) / (1 + n)))
    call = "worse" if low > 0 else ("better" if high < 0 else "no significant difference")
    # "verdict": the same, its name before version 2 of compare --json (docs/compare.md)
    out.update(call=call, verdict=call, reason=None, difference_ns=float(d0), ci_low_ns=float(low),
               ci_high_ns=float(high), p_value=p)
    return out


def _as_pwcet(m: Measurement | Pwcet, exceedance: float, gof_draws: int) -> Pwcet:
    if isinstance(m, Pwcet):
        return m
    rs = measurement_pwcet(m, exceedance, gof_draws=gof_draws)
    if not rs:
        raise UserError(f"measurement {m.label or '?'} stored no per-window maxima (ti_window_max), "
                        "so it has no probable worst case.")
    return rs[0]


# ---- the return-level plot -----------------------------------------------------------

def plot_data(r: Pwcet, band_points: int = 5) -> dict | None:
    """What a return-level plot of r shows, in µs against the return period in cycles:
    observed block maxima at their empirical return periods (Weibull plotting positions
    i/(n+1)), the fitted curve, its 95 % profile-likelihood band at band_points periods,
    and the level with its interval at the requested exceedance (an estimate) or at the
    smallest probability the data support (a refusal that still has a sound fit). None
    when there is no fitted level to show (a refusal without one draws no chart)."""
    if r.fit is None or not r.maxima_ns:
        return None
    if r.applicable:
        p, mark = r.exceedance, (r.level_ns, r.ci_low_ns, r.ci_high_ns)
    elif r.supported_exceedance is not None:
        p, mark = r.supported_exceedance, (r.supported_level_ns, r.supported_low_ns, r.supported_high_ns)
    else:
        return None
    m = r.block_cycles
    if isinstance(r.fit, PotFit):
        # the cluster peaks, at the rate of clusters above each: λ·(1 - i/(k+1))
        x = np.sort(r.fit.peaks)
        F = np.arange(1, len(x) + 1) / (len(x) + 1)
        observed = [(float(m / (r.fit.rate * (1 - f))), float(v) / 1000) for f, v in zip(F, x)]
        q_start = min(0.5, 0.9 * r.fit.rate)
    else:
        x = np.sort(np.asarray(r.maxima_ns, dtype=float))
        F = np.arange(1, len(x) + 1) / (len(x) + 1)
        observed = [(float(m / (1 - f)), float(v) / 1000) for f, v in zip(F, x)]
        q_start = 0.5
    out = {"observed": observed, "curve": [], "band": [], "exceedance": p}
    q_target = block_probability(p, m)
    qs = np.geomspace(q_start, q_target, 40)
    out["curve"] = [(float(m / q), float(r.fit.isf(q)) / 1000) for q in qs]
    for q in np.geomspace(q_start, q_target, band_points):
        _, lo, hi = return_level(r.fit, x, float(q))
        out["band"].append((float(m / q), lo / 1000, math.inf if hi is None else hi / 1000))
    out["mark"] = (1 / p, mark[0] / 1000, mark[1] / 1000, None if mark[2] is None else mark[2] / 1000)
    return out
