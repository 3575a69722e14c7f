"""rtgauge/analysis/pwcet/autocorr.py (the sample autocorrelation and the Ljung-Box test the
pWCET's independence check uses) against statsmodels' acf and acorr_ljungbox, the
implementation it replaced in the core install. statsmodels comes with the test extra
only; where it is missing this file is skipped. A deliberately wrong variant (the
Box-Pierce statistic, and the autocorrelation with the unbiased n - k divisor) is put
through the same comparison to show that the comparison tells them apart."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rtgauge.analysis.pwcet import autocorr
from rtgauge.analysis import pwcet as pw

sm_diag = pytest.importorskip("statsmodels.stats.diagnostic")
sm_tsa = pytest.importorskip("statsmodels.tsa.stattools")


def _ar1(rng, n, phi):
    z = np.empty(n)
    z[0] = rng.normal()
    for i in range(1, n):
        z[i] = phi * z[i - 1] + np.sqrt(1 - phi ** 2) * rng.normal()
    return z


def _series():
    """Series of the kinds the check sees: ranks of independent and of autocorrelated
    Gumbel block maxima (as tests/test_pwcet.py draws them), ranks with ties, a short
    series, and a trend."""
    rng = np.random.default_rng(7)
    out = {}
    for n in (6, 30, 200, 1000):
        out[f"iid n={n}"] = stats.rankdata(stats.gumbel_r.rvs(size=n, random_state=rng))
    for phi in (0.3, 0.6, -0.5):
        out[f"AR(1) {phi}"] = stats.rankdata(_ar1(rng, 200, phi))
    out["ties"] = stats.rankdata(rng.integers(0, 8, size=120))
    out["trend"] = np.arange(50, dtype=float) + rng.normal(size=50)
    return out


def _statsmodels(x, lags):
    lb = sm_diag.acorr_ljungbox(x, lags=[lags])
    return (float(lb["lb_stat"].iloc[0]), float(lb["lb_pvalue"].iloc[0]),
            sm_tsa.acf(x, nlags=lags, fft=False))


def _box_pierce_unbiased(x, lags):
    """The broken method: Box-Pierce's Q = n sum r_k^2 with r_k over n - k terms."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    d = x - x.mean()
    r = np.array([1.0] + [np.dot(d[:n - k], d[k:]) / (n - k) / (np.dot(d, d) / n) for k in range(1, lags + 1)])
    q = float(n * np.sum(r[1:] ** 2))
    return q, float(stats.chi2.sf(q, lags)), r


def _agrees(ours, theirs) -> bool:
    (q, p, r), (q2, p2, r2) = ours, theirs
    return (np.isclose(q, q2, rtol=1e-9, atol=0) and np.isclose(p, p2, rtol=1e-7, atol=1e-300)
            and np.allclose(r, r2, rtol=1e-9, atol=1e-12))


@pytest.mark.parametrize("name", list(_series()))
def test_ljung_box_and_acf_are_statsmodels(name):
    x = _series()[name]
    for lags in sorted({1, max(1, min(10, len(x) // 5)), min(10, len(x) - 1)}):
        q, p = autocorr.ljung_box(x, lags)
        ours = (q, p, autocorr.acf(x, lags))
        assert _agrees(ours, _statsmodels(x, lags)), (name, lags, ours, _statsmodels(x, lags))


def test_the_comparison_catches_a_wrong_method():
    # Box-Pierce with the unbiased autocorrelation is a plausible slip: it differs from
    # Ljung-Box on every series here, and the comparison above says so.
    for name, x in _series().items():
        lags = max(1, min(10, len(x) // 5))
        assert not _agrees(_box_pierce_unbiased(x, lags), _statsmodels(x, lags)), name


def test_independence_check_decides_as_before():
    # The check's verdict, statistic and p-value on autocorrelated and on shuffled maxima
    # are those statsmodels gave it.
    rng = np.random.default_rng(5)
    z = _ar1(rng, 200, 0.6)
    x = 20_000 + 3_000 * stats.gumbel_r.ppf(stats.norm.cdf(z))
    for series, passed in ((x, False), (rng.permutation(x), True)):
        c = pw.check_independence(series)
        q, p, _ = _statsmodels(stats.rankdata(series), 10)
        assert c.passed is passed
        assert c.statistic == pytest.approx(q, rel=1e-9) and c.p_value == pytest.approx(p, rel=1e-7)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        autocorr.acf(np.ones(10), 3)
    with pytest.raises(ValueError):
        autocorr.ljung_box(np.arange(5.0), 5)
