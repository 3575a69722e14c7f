"""Peaks over a threshold: the probable worst case of a series whose block maxima are
dependent (late windows that come in bursts), by a generalised Pareto distribution (GPD)
fitted to declustered exceedances (docs/pwcet.md, "Peaks over a threshold").

The series is the same one the GEV path reads: one maximum a window (block) of m cycles,
in time order. Here:

* threshold: the highest of THRESHOLD_QUANTILES of the window maxima that leaves at least
  MIN_PEAKS cluster peaks above it (the higher the threshold, the closer the excesses are
  to a GPD; the more peaks, the smaller the variance); the goodness of fit of the GPD at
  that threshold is then tested (rtgauge/analysis/pwcet/);
* declustering: the extremal index θ (1 / the mean cluster size in the limit) by the
  intervals estimator of Ferro and Segers (2003), from the times between exceedances;
  the exceedances are then cut into C = floor(θ·N) + 1 clusters at the C - 1 longest
  times between them (their "intervals declustering"), and each cluster gives its peak;
* fit: a GPD to every exceedance's excess over the threshold (location 0), by maximum
  likelihood (scipy.stats.genpareto.fit) with a small-sample penalty on the shape
  (shape_penalty: the plain estimate from 30-40 clusters is low by about 0.1); the
  excesses are the marginal tail, which dependence does not
  change (fitting the cluster peaks alone, the maxima of several exceedances, gives a
  shape biased low at the thresholds a short run allows: docs/pwcet.md); the rate λ of
  clusters a window is θ · exceedances / windows;
* level: the level z whose clusters come at rate q per window, λ·S(z - u) = -ln(1 - q),
  where S is the GPD's survival function and q = 1 - (1 - p)^m the block probability of
  the per-cycle p. The run's maximum over k windows is then exp(-k·λ·S(z - u)) (the
  extremal index is in λ = θ·N / windows), which is what the held-out check and the
  calibration judge;
* interval: profile likelihood of z (Coles 2001, §4.3.4 and §5.3), the likelihood of the
  excesses and of the binomial count of exceedances among the windows multiplied by θ
  (dependent exceedances are worth θ·N independent ones: about the number of clusters),
  plus the shape penalty, maximised over the shape and the exceedance rate with z held;
  θ is held at its estimate.

No module of rtgauge is imported here: rtgauge/analysis/pwcet/ calls these and turns
their figures into checks and an answer.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

# The candidate thresholds, as quantiles of the window maxima, highest first.
THRESHOLD_QUANTILES = (0.95, 0.90, 0.85, 0.80, 0.75, 0.70)
MIN_PEAKS = 30          # cluster peaks the fit needs at the chosen threshold
MIN_PEAKS_HALF = 12     # ... and the held-out check's fit of the first half
CONFIDENCE = 0.95
# The strength k of the shape penalty -k / (1 + ξ) added to the log-likelihood (see
# shape_penalty): 0 is plain maximum likelihood; 3, the first-order correction, chosen by
# measurement over 2 (docs/pwcet.md, "Small samples: the shape penalty").
SHAPE_PENALTY = 3.0
METHOD = ("GPD on declustered peaks over a threshold (maximum likelihood with a small-sample shape penalty; "
          "extremal index by the intervals estimator), profile-likelihood interval")


@contextmanager
def quiet():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def profile_bound(g, centre: float, direction: int) -> float | None:
    """Where the profile-likelihood function g (above 0 inside the interval, below 0
    outside) crosses 0, walking from centre in direction (+1 or -1) with growing steps
    (0.05, x1.6) and refined by Brent's method; None when it does not cross within a
    shape parameter of magnitude 5 (the interval is open on that side). Shared by the
    GEV and the GPD paths."""
    inner, step = centre, 0.05
    for _ in range(30):
        outer = centre + direction * step
        if abs(outer) > 5:
            return None
        if g(outer) < 0:
            return optimize.brentq(g, min(inner, outer), max(inner, outer), xtol=1e-3)
        inner, step = outer, step * 1.6
    return None


def nelder_mead_restarted(nll, start, step2: float, tol: float, maxfev: int, second0: float):
    """Nelder-Mead on a two-parameter negative log-likelihood from `start` (an initial
    simplex of 0.05 on the shape and step2 on the second parameter, tolerance tol); where
    that ends outside the support, restarted from shapes 0, -0.3 and +0.3 with the second
    parameter at second0, the best kept. Shared by the GEV and the GPD profiles."""
    simplex = np.array([start, (start[0] + 0.05, start[1]), (start[0], start[1] + step2)])
    best = optimize.minimize(nll, start, method="Nelder-Mead",
                             options={"xatol": tol, "fatol": tol, "maxfev": maxfev, "initial_simplex": simplex})
    if not np.isfinite(best.fun):
        for x0 in (0.0, -0.3, 0.3):
            rr = optimize.minimize(nll, (x0, second0), method="Nelder-Mead",
                                   options={"xatol": 1e-4, "fatol": 1e-4, "maxfev": 600})
            if rr.fun < best.fun:
                best = rr
    return best


# ---- declustering ----------------------------------------------------------------

def extremal_index(times: np.ndarray) -> float:
    """The intervals estimator of the extremal index θ (Ferro and Segers 2003) from the
    (sorted) positions of the exceedances; the bias-corrected form when an interval
    longer than 2 occurs. 1 with fewer than two exceedances."""
    t = np.diff(np.asarray(times, dtype=float))
    if len(t) < 1:
        return 1.0
    n = len(t)
    if t.max() <= 2:
        theta = 2 * t.sum() ** 2 / (n * np.sum(t ** 2))
    else:
        theta = 2 * np.sum(t - 1) ** 2 / (n * np.sum((t - 1) * (t - 2)))
    return float(min(1.0, theta))


def decluster(x: np.ndarray, u: float, theta: float | None = None) -> tuple[np.ndarray, np.ndarray, float, int]:
    """(cluster peaks in time order, their positions, θ, exceedances): the exceedances of
    u cut into clusters at the C - 1 longest intervals between them, C = floor(θ·N) + 1
    (intervals declustering; ties at the cut keep their clusters together)."""
    pos = np.flatnonzero(x > u)
    if theta is None:
        theta = extremal_index(pos)
    if len(pos) == 0:
        return np.empty(0), np.empty(0, dtype=int), theta, 0
    gaps = np.diff(pos)
    c = min(len(pos), int(math.floor(theta * len(pos))) + 1)
    if c <= 1 or len(gaps) == 0:
        starts = np.array([0])
    else:
        cut = np.sort(gaps)[::-1][c - 2]               # the (C-1)-th longest interval
        longer = gaps > cut
        # the intervals equal to the cut join in, up to C - 1 cuts, the earliest first
        equal = np.flatnonzero(gaps == cut)[: max(0, c - 1 - int(longer.sum()))]
        split = longer.copy()
        split[equal] = True
        starts = np.concatenate(([0], np.flatnonzero(split) + 1))
    vals = x[pos]
    peaks = np.maximum.reduceat(vals, starts)
    ends = np.append(starts[1:], len(pos))
    where = np.array([pos[a + int(np.argmax(vals[a:b]))] for a, b in zip(starts, ends)], dtype=int)
    return peaks, where, theta, len(pos)


def choose_threshold(x: np.ndarray, min_peaks: int = MIN_PEAKS) -> tuple[float, float, tuple] | None:
    """(quantile, threshold u, decluster(x, u)) at the highest candidate quantile whose
    exceedances give at least min_peaks cluster peaks; None when none does."""
    for qq in THRESHOLD_QUANTILES:
        u = float(np.quantile(x, qq))
        d = decluster(x, u)
        if len(d[0]) >= min_peaks:
            return qq, u, d
    return None


def most_peaks(x: np.ndarray) -> int:
    """The most cluster peaks any candidate threshold gives."""
    return max(len(decluster(x, float(np.quantile(x, qq)))[0]) for qq in THRESHOLD_QUANTILES)


# ---- the model --------------------------------------------------------------------

@dataclass
class PotFit:
    """A GPD for the exceedances' excesses over the threshold (shape ξ: > 0 heavy,
    0 exponential, < 0 bounded; scipy's genpareto c is ξ itself), and the rate of
    clusters. Levels in the units of the data (ns)."""
    threshold: float
    shape: float
    scale: float
    rate: float                 # λ: clusters above the threshold a window
    extremal_index: float       # θ
    exceedances: int            # windows above the threshold
    clusters: int
    windows: int
    loglik: float
    quantile: float | None = None
    peaks: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    values: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)     # every exceedance
    peak_positions: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int), repr=False)
    penalty: float = 0.0        # k of shape_penalty in the fit, the profiles and the intervals

    def to_json(self) -> dict:
        return {"distribution": "GPD",
                "method": "penalised maximum likelihood" if self.penalty else "maximum likelihood",
                "shape_penalty": self.penalty, "threshold_ns": self.threshold,
                "threshold_quantile": self.quantile, "shape": self.shape, "scale": self.scale,
                "cluster_rate": self.rate, "extremal_index": self.extremal_index, "exceedances": self.exceedances,
                "clusters": self.clusters, "windows": self.windows, "loglik": self.loglik}

    def event_rate(self, z) -> np.ndarray:
        """Clusters a window whose peak exceeds z (z at or above the threshold)."""
        with quiet():
            return self.rate * stats.genpareto.sf(np.maximum(np.asarray(z, dtype=float) - self.threshold, 0.0),
                                                  self.shape, 0.0, self.scale)

    def cdf(self, z) -> np.ndarray:
        """The per-window distribution that, raised to the power k, is the distribution of
        the maximum of k windows: exp(-λ·S(z - u)) (0 below the threshold, which the
        model does not describe: a window maximum there is taken as impossible for a
        run's maximum)."""
        z = np.asarray(z, dtype=float)
        return np.where(z >= self.threshold, np.exp(-self.event_rate(z)), 0.0)

    def isf(self, q):
        """The level whose clusters come at rate q a window (-ln(1-q), so that k windows'
        maximum exceeds it with probability 1 - (1-q)^k); the threshold when q is at
        least the cluster rate."""
        s = -np.log1p(-np.asarray(q, dtype=float))
        with quiet():
            lv = self.threshold + stats.genpareto.isf(np.minimum(s / self.rate, 1.0), self.shape, 0.0, self.scale)
        return np.where(s >= self.rate, self.threshold, lv)


def gpd_loglik(y: np.ndarray, xi: float, sigma: float) -> float:
    """GPD log-likelihood of excesses y >= 0: the value of
    scipy.stats.genpareto.logpdf(y, xi, 0, sigma).sum() (tests/test_pwcet_pot.py checks),
    written out because the profile likelihood evaluates it thousands of times."""
    if not sigma > 0 or not np.isfinite(xi) or abs(xi) > 5:
        return -np.inf
    if abs(xi) < 1e-9:
        return float(-len(y) * math.log(sigma) - y.sum() / sigma)
    t = 1 + xi * y / sigma
    if np.any(t <= 0):
        return -np.inf
    return float(-len(y) * math.log(sigma) - (1 + 1 / xi) * np.log(t).sum())


def shape_penalty(xi: float, k: float = SHAPE_PENALTY) -> float:
    """The penalty -k / (1 + ξ) the fit adds to the log-likelihood of the excesses (-inf
    at ξ <= -1, where the GPD likelihood is unbounded). The maximum-likelihood shape from
    n excesses is low by about 3 / n (the first-order bias at ξ = 0 is -3 / n: Giles, Feng
    and Godwin 2016; measured -3 to -4 / n for -1/3 <= ξ <= 0.2 and n = 30-90). The
    penalty's slope k / (1 + ξ)² times the shape's asymptotic variance (1 + ξ)² / n moves
    the estimate up by k / n to first order, so k = 3 cancels that bias; the scale's
    bias, whose first order is the shape's times -σ / (1 + ξ), goes with it. n is the
    number of clusters the likelihood is worth (it is multiplied by θ), so the same k
    serves every θ. From 30 independent excesses the shift is larger than its first
    order (the shape's mean error becomes about +2 / n), while on dependent series of
    the quick profile's length k = 2 still leaves the level optimistic and its PIT
    not uniform; docs/pwcet.md, "Small samples: the shape penalty", has the figures."""
    if not xi > -1:
        return -np.inf
    return -k / (1 + xi) if k else 0.0


def rate_loglik(clusters: int, windows: int, lam: float) -> float:
    """Binomial log-likelihood (without its constant) of the count of clusters."""
    if not 0 < lam < 1:
        return -np.inf
    return clusters * math.log(lam) + (windows - clusters) * math.log1p(-lam)


def fit_gpd(values: np.ndarray, u: float, windows: int, theta: float, peaks=None, quantile: float | None = None,
            positions=None, penalty: float = SHAPE_PENALTY, start: tuple[float, float] | None = None) -> PotFit:
    """GPD (location 0) of the exceedances' excesses over u, on a unit scale: maximum
    likelihood (scipy.stats.genpareto.fit), then, with a penalty k, the maximum of θ times
    the log-likelihood plus shape_penalty(ξ, k) from there (scipy.optimize); the rate of
    clusters θ·N / windows; ValueError when the fit does not converge. peaks: the cluster
    peaks (for the checks). start: (shape, scale) to start the penalised maximum from
    instead of the plain fit (a bootstrap refit starts at the fit it was drawn from: the
    same maximum, a fifth of the time)."""
    values = np.asarray(values, dtype=float)
    y = values - u
    b = float(np.mean(y)) or 1.0
    with quiet():
        if start is not None and penalty:
            xi, s = start[0], start[1] / b
        else:
            xi, _, s = stats.genpareto.fit(y / b, floc=0)
        ll = gpd_loglik(y / b, float(xi), float(s))
        if penalty:
            def nll(par):
                return -(theta * gpd_loglik(y / b, par[0], math.exp(par[1])) + shape_penalty(par[0], penalty))
            x0 = (max(float(xi), -0.9), math.log(s)) if s > 0 else (0.0, 0.0)
            if not np.isfinite(nll(x0)):
                x0 = (0.0, 0.0)          # an exponential with the excesses' mean: always inside the support
            best = optimize.minimize(nll, x0, method="Nelder-Mead",
                                     options={"xatol": 1e-6, "fatol": 1e-9, "maxfev": 2000})
            if np.isfinite(best.fun):
                xi, s = float(best.x[0]), math.exp(best.x[1])
                ll = gpd_loglik(y / b, xi, s)
    if not np.isfinite(ll):
        raise ValueError("the GPD fit did not converge")
    n_exc = len(y)
    peaks = values if peaks is None else np.asarray(peaks, dtype=float)
    return PotFit(threshold=u, shape=float(xi), scale=float(s) * b, rate=theta * n_exc / windows,
                  extremal_index=theta, exceedances=n_exc, clusters=len(peaks), windows=windows,
                  loglik=theta * (ll - n_exc * math.log(b) + rate_loglik(n_exc, windows, n_exc / windows)),
                  quantile=quantile, peaks=peaks, values=values,
                  peak_positions=np.asarray([] if positions is None else positions, dtype=int), penalty=penalty)


def fit_series(x: np.ndarray, min_peaks: int = MIN_PEAKS, penalty: float = SHAPE_PENALTY) -> PotFit | None:
    """Threshold, declustering and fit of a series of window maxima; None when no
    candidate threshold leaves min_peaks cluster peaks."""
    x = np.asarray(x, dtype=float)
    chosen = choose_threshold(x, min_peaks)
    if chosen is None:
        return None
    qq, u, (peaks, where, theta, n_exc) = chosen
    return fit_gpd(x[x > u], u, len(x), theta, peaks, qq, where, penalty)


def fit_at(x: np.ndarray, u: float, min_peaks: int, theta: float | None = None,
           penalty: float = SHAPE_PENALTY) -> PotFit | None:
    """Declustering and fit at a given threshold (θ estimated unless given); None with
    fewer than min_peaks cluster peaks."""
    x = np.asarray(x, dtype=float)
    peaks, where, theta, n_exc = decluster(x, u, theta)
    if len(peaks) < min_peaks:
        return None
    return fit_gpd(x[x > u], u, len(x), theta, peaks, None, where, penalty)


# ---- intervals ------------------------------------------------------------------------

def _level_sigma(z: float, u: float, xi: float, lam: float, s: float) -> float:
    """The GPD scale that puts the level of cluster rate s at z: z = u + σ/ξ·((λ/s)^ξ - 1)."""
    r = math.log(lam / s)
    if abs(xi) < 1e-9:
        return (z - u) / r
    return xi * (z - u) / math.expm1(xi * r)


def return_level(fit: PotFit, q: float, confidence: float = CONFIDENCE) -> tuple[float, float, float | None]:
    """(level, low, high) of the level whose clusters come at rate q a window, the
    interval by profile likelihood over (ξ, λ) with the level held: every level whose
    profile log-likelihood is within chi2(1, confidence)/2 of the maximum. high is None
    when the data do not bound it; low is at least the threshold."""
    with quiet():
        return _return_level(fit, q, confidence)


def _return_level(fit: PotFit, q: float, confidence: float) -> tuple[float, float, float | None]:
    u = fit.threshold
    zhat = float(fit.isf(q))
    if -math.log1p(-q) >= fit.rate:       # within the clusters themselves: no extrapolation
        return zhat, u, float(fit.values.max())
    b, lmax, profile = _profile(fit, q)
    cut = lmax - stats.chi2.ppf(confidence, 1) / 2
    values: dict[float, float] = {}

    def g(level: float) -> float:
        if level not in values:
            values[level] = max(profile(level) - cut, -1e6)
        return values[level]

    zh = (zhat - u) / b
    width = max(zh, 1.0)

    def bound(direction: int) -> float | None:
        inner, step = zh, 0.05 * width
        for _ in range(40):
            outer = zh + direction * step
            if outer <= 0:
                outer = 1e-9 * width
                return optimize.brentq(g, outer, inner, xtol=1e-4 * width) if g(outer) < 0 < g(inner) else 0.0
            if g(outer) < 0 < g(inner):
                return optimize.brentq(g, min(inner, outer), max(inner, outer), xtol=2e-3 * width, rtol=1e-4)
            inner, step = outer, step * 2.5
            if step > 1e6 * width:
                break
        return None

    high, low = bound(+1), bound(-1)
    return zhat, (u if low is None else u + b * low), (None if high is None else u + b * high)


def _profile(fit: PotFit, q: float):
    """(unit b, maximum log-likelihood, profile(level in units of b above the threshold))
    for the level at cluster rate q: the likelihood of the excesses and of the count of
    exceedances, times θ, maximised over (ξ, exceedance rate) with the level held."""
    n, k, w = fit.windows, fit.exceedances, fit.extremal_index
    b = float(np.mean(fit.values - fit.threshold)) or 1.0
    y = (fit.values - fit.threshold) / b
    s = -math.log1p(-q)
    zeta0 = k / n
    pen = fit.penalty
    lmax = w * (gpd_loglik(y, fit.shape, fit.scale / b) + rate_loglik(k, n, zeta0)) + shape_penalty(fit.shape, pen)
    cache: dict[float, tuple] = {}
    logit0 = math.log(zeta0 / (1 - zeta0)) if zeta0 < 1 else 5.0

    def profile(level: float) -> float:
        def nll(theta):
            xi, lg = theta
            zeta = 1 / (1 + math.exp(-lg))
            lam = w * zeta
            if lam <= s:
                return np.inf
            sig = _level_sigma(level, 0.0, xi, lam, s)
            return -(w * (gpd_loglik(y, xi, sig) + rate_loglik(k, n, zeta)) + shape_penalty(xi, pen))
        near = min(cache, key=lambda v: abs(v - level)) if cache else None
        start = cache[near] if near is not None else (fit.shape, logit0)
        best = nelder_mead_restarted(nll, start, 0.1, 1e-4, 600, logit0)
        if np.isfinite(best.fun):
            cache[level] = tuple(best.x)
        return -float(best.fun)

    return b, lmax, profile


def shape_interval(fit: PotFit, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """95 % profile-likelihood interval of the GPD shape ξ (the scale maximised for each
    ξ; the likelihood times θ, as for the level); a side is None when the data do not
    bound it (|ξ| up to 5 searched)."""
    w = fit.extremal_index
    with quiet():
        b = float(np.mean(fit.values - fit.threshold)) or 1.0
        y = (fit.values - fit.threshold) / b
        pen = fit.penalty
        lmax = w * gpd_loglik(y, fit.shape, fit.scale / b) + shape_penalty(fit.shape, pen)
        cut = lmax - stats.chi2.ppf(confidence, 1) / 2
        ymax = float(y.max())

        def g(xi: float) -> float:
            # for ξ < 0 the scale must exceed -ξ·max(y) (every excess inside the support)
            lo = math.log(max(-xi * ymax, 0.0) + 1e-9)
            r = optimize.minimize_scalar(lambda ls: -w * gpd_loglik(y, xi, math.exp(ls)) - shape_penalty(xi, pen),
                                         bounds=(lo, lo + 12 if xi < 0 else math.log(ymax + 1) + 6),
                                         method="bounded", options={"xatol": 1e-6})
            return max(-float(r.fun) - cut, -1e6)

        return profile_bound(g, fit.shape, -1), profile_bound(g, fit.shape, +1)


# ---- goodness of fit ------------------------------------------------------------------

def ad_statistic(y_sorted: np.ndarray, xi: float, sigma: float) -> float:
    """Anderson-Darling distance of sorted excesses to a GPD (every parameter given)."""
    u = np.clip(stats.genpareto.cdf(y_sorted, xi, 0.0, sigma), 1e-12, 1 - 1e-12)
    n = len(u)
    i = np.arange(1, n + 1)
    return float(-n - np.mean((2 * i - 1) * (np.log(u) + np.log1p(-u[::-1]))))


def goodness_of_fit(fit: PotFit, draws: int, seed: int = 0) -> tuple[float, float, int]:
    """(A², p-value, draws used): Anderson-Darling distance between the cluster peaks'
    excesses (independent, unlike the exceedances) and the fitted GPD; its p-value by
    Monte Carlo, drawing as many peaks from the fit and comparing them with the same fit
    (the parameters come from every exceedance, most of them not peaks, so they are taken
    as given)."""
    with quiet():
        y = np.sort(fit.peaks - fit.threshold)
        a2 = ad_statistic(y, fit.shape, fit.scale)
        rng = np.random.default_rng(seed)
        null = [ad_statistic(np.sort(stats.genpareto.rvs(fit.shape, 0.0, fit.scale, size=len(y), random_state=rng)),
                             fit.shape, fit.scale) for _ in range(draws)]
        p = (1 + sum(v >= a2 for v in null)) / (1 + len(null))
        return a2, float(p), len(null)


def draw_levels(fit: PotFit, q: float, draws: int, rng) -> np.ndarray:
    """Parametric bootstrap of the level at cluster rate q: as many independent
    exceedances as the fit's evidence is worth (binomial among the windows at the cluster
    rate) drawn from the fitted GPD and refitted, each its own cluster."""
    out = []
    with quiet():
        for _ in range(draws):
            k = int(rng.binomial(fit.windows, fit.rate))
            if k < 3:
                continue
            d = stats.genpareto.rvs(fit.shape, 0.0, fit.scale, size=k, random_state=rng)
            try:
                f = fit_gpd(fit.threshold + d, fit.threshold, fit.windows, 1.0, penalty=fit.penalty,
                            start=(fit.shape, fit.scale))
            except ValueError:
                continue
            out.append(float(f.isf(q)))
    return np.asarray(out)
