"""Serial correlation of a series: the sample autocorrelation and the Ljung-Box
portmanteau test, with numpy and scipy alone (the core install carries no statistics
package beyond scipy; docs/install.md). tests/test_autocorr.py checks both against
statsmodels' acf and acorr_ljungbox where the test extra installs it."""

from __future__ import annotations

import numpy as np
from scipy import stats


def acf(x, nlags: int) -> np.ndarray:
    """The sample autocorrelation at lags 0..nlags: r_k = c_k / c_0 with
    c_k = sum_{t<n-k} (x_t - mean)(x_{t+k} - mean) / n (the biased estimator, which keeps
    the sequence positive semi-definite). nlags is capped at n - 1. A constant series has
    no autocorrelation: ValueError."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 2:
        raise ValueError("an autocorrelation needs at least two values")
    d = x - x.mean()
    c0 = float(np.dot(d, d))
    if c0 == 0.0:
        raise ValueError("a constant series has no autocorrelation")
    lags = min(int(nlags), n - 1)
    return np.array([1.0] + [float(np.dot(d[:n - k], d[k:])) / c0 for k in range(1, lags + 1)])


def ljung_box(x, lags: int) -> tuple[float, float]:
    """The Ljung-Box statistic Q = n (n + 2) sum_{k=1..h} r_k^2 / (n - k) over the first
    h = lags autocorrelations, and its p-value P(chi2(h) > Q) under independence.
    Returns (Q, p)."""
    n = len(x)
    h = int(lags)
    if not 1 <= h < n:
        raise ValueError(f"Ljung-Box needs 1 <= lags < n (lags {h}, n {n})")
    r = acf(x, h)[1:]
    q = float(n * (n + 2) * np.sum(r ** 2 / (n - np.arange(1, h + 1))))
    return q, float(stats.chi2.sf(q, h))
