"""The conditions that make an estimate meaningful, each a Check: independence
(Ljung-Box on ranks), identical distribution (Kolmogorov-Smirnov of the halves), the
fit (Anderson-Darling with a parametric bootstrap), one regime (no mixture), the
held-out maximum, and for peaks over a threshold the cluster rate; with the words of a
failed check."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from rtgauge.analysis.pwcet import pot
from rtgauge.analysis.pwcet.autocorr import acf, ljung_box
from rtgauge.analysis.pwcet.pot import PotFit
from rtgauge.analysis.pwcet.fit import (
    ALPHA, GOF_DRAWS, GevFit, MIN_BLOCKS, MIX_ALPHA, MIX_GAP, _quiet, fit_gev, refit, return_level,
)


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



def check_independence(x: np.ndarray) -> Check:
    """Ljung-Box portmanteau test (analysis/pwcet/autocorr.py) on the ranks of the series
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


def _failed_text(failed: list[Check], what: str = "block maxima") -> str:
    return "; ".join(f"the {what} fail the {c.name} check ({c.test}: p={c.p_value:.2g}; {c.detail})"
                     if c.p_value is not None else f"{c.name}: {c.detail}" for c in failed)
