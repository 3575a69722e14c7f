"""Peaks over a threshold (rtgauge/analysis/pwcet/pot.py, docs/pwcet.md): where the block
maxima are dependent (late windows in bursts), a GPD fitted to declustered exceedances
answers. Ground truth: max-autoregressive series of window maxima whose marginal tail and
extremal index are known exactly (scripts/calibration.py), so the level a
run's maximum reaches at a given rate is known; the deliberately inflated and deflated
levels, and the level without declustering, are judged by the same test."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rtgauge.analysis import pwcet as pw
from rtgauge.analysis.pwcet import pot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import calibration as pc  # noqa: E402  (scripts/calibration.py: the calibration's draws and judges)

M = 100                 # cycles a window (the quick profile: 0.1 s windows at 1 kHz)
WINDOWS = 300           # the quick profile's 30 s latency job


def test_likelihood_and_fit_are_scipys():
    y = stats.genpareto.rvs(0.1, 0, 2.0, size=50, random_state=1)
    for xi in (-0.3, -1e-12, 0.0, 0.2):
        assert pot.gpd_loglik(y, xi, 2.5) == pytest.approx(stats.genpareto.logpdf(y, xi, 0, 2.5).sum(), rel=1e-9)
    assert pot.gpd_loglik(np.array([10.0]), -0.5, 1.0) == -np.inf       # beyond the bounded tail's end
    ml = pot.fit_gpd(5.0 + y, 5.0, 500, 1.0, penalty=0)                # plain maximum likelihood: scipy's
    xi, _, s = stats.genpareto.fit(y, floc=0)
    assert ml.shape == pytest.approx(xi, abs=2e-3) and ml.scale == pytest.approx(s, rel=2e-3)
    assert ml.rate == pytest.approx(0.1)
    # the default fit maximises the log-likelihood plus the shape penalty: no neighbour
    # does better, and its shape is above the maximum-likelihood one by about 3 / n
    f = pot.fit_gpd(5.0 + y, 5.0, 500, 1.0)
    assert f.penalty == pot.SHAPE_PENALTY > 0

    def objective(a, b):
        return pot.gpd_loglik(y, a, b) + pot.shape_penalty(a)
    best = objective(f.shape, f.scale)
    for da, db in ((1e-3, 0), (-1e-3, 0), (0, 1e-3), (0, -1e-3), (1e-3, -1e-3), (-1e-3, 1e-3)):
        assert objective(f.shape + da, f.scale * (1 + db)) <= best + 1e-9
    assert 0.5 * 3 / 50 < f.shape - ml.shape < 2 * 3 / 50 and f.scale < ml.scale
    assert pot.shape_penalty(-1.0) == -np.inf and pot.shape_penalty(0.3, 0) == 0.0
    # the level at a cluster rate inverts the run-maximum distribution: k windows'
    # maximum stays under isf(q) with probability (1-q)^k
    z = float(f.isf(1e-4))
    assert f.cdf(z) ** 1000 == pytest.approx((1 - 1e-4) ** 1000, rel=1e-9)


def test_extremal_index_and_declustering():
    # known θ: a max-autoregressive series with θ = 0.4, long enough for the estimator to settle
    x = pc.draw_dependent(np.random.default_rng(0), 100_000, "exponential", 0.4)
    u = float(np.quantile(x, 0.95))
    peaks, where, theta, n = pot.decluster(x, u)
    assert 0.35 < theta < 0.45 and n == int(np.sum(x > u))
    assert len(peaks) == int(np.floor(theta * n)) + 1
    assert np.all(x[where] == peaks) and np.all(np.diff(where) > 0)
    # independent values: θ near 1, every exceedance nearly its own cluster
    iid = pc.draw_dependent(np.random.default_rng(1), 100_000, "exponential", 1.0)
    assert pot.decluster(iid, float(np.quantile(iid, 0.95)))[2] > 0.9
    # by hand: exceedances at 1, 2, 3 and 10, 11 and 30: two long gaps split three clusters
    s = np.zeros(40)
    s[[1, 2, 3, 10, 11, 30]] = [5, 7, 6, 4, 9, 3]
    peaks, where, theta, n = pot.decluster(s, 1.0, theta=0.4)
    assert list(peaks) == [7, 9, 3] and list(where) == [2, 11, 30] and n == 6


@pytest.mark.parametrize("seed", range(8))
def test_dependent_maxima_are_refused_by_the_gev_and_answered_by_pot(seed):
    """The quick profile's size: 300 windows of 100 cycles, late windows in runs (θ = 0.4).
    Block maxima fail the independence check; peaks over a threshold pass their own checks
    and, at a probability within the evidence, give an interval that holds the true level
    (or refuse with a code); every estimate within 100x the observed maximum."""
    x = 20_000 + 1_000 * pc.draw_dependent(np.random.default_rng(100 + seed), WINDOWS, "exponential", 0.4)
    p = 1e-6                                    # q = 1e-4 a window: 33 times beyond the 300 windows
    r = pw.analyse(x, M, p, interval_ns=1_000_000)
    assert r.checks[0].name == "independence" and r.checks[0].passed is False
    assert r.by_pot and r.to_json()["method"] == pw.POT_METHOD and "(peaks over a threshold" in r.summary()
    assert r.code == "too-few-exceedances" or (isinstance(r.fit, pot.PotFit)
                                               and r.to_json()["fit"]["distribution"] == "GPD")
    if not r.applicable:
        # 300 windows in runs of ~2.5 hold about 36 clusters above the 0.7 quantile: some
        # series have fewer than 30 (run longer), or fail a check
        assert r.code in ("too-few-exceedances", "too-uncertain", "failed-validation", "bad-fit", "not-iid"), r.reason
        return
    truth = 20_000 + 1_000 * pc.true_level("exponential", 0.4, pw.block_probability(p, M))
    assert r.ci_low_ns <= truth <= r.ci_high_ns, (r.summary(), truth)
    assert r.level_ns <= 100 * r.observed_max_ns and r.ci_high_ns <= pw.MAX_SPAN * r.ci_low_ns


CASES = 40
Q = 1e-4      # a window's rate: 33 times beyond 300 windows


@pytest.fixture(scope="module", params=[("exponential", 0.4), ("bounded", 0.4), ("exponential", 1.0)],
                ids=["exponential-dependent", "bounded-dependent", "exponential-iid"])
def judged(request):
    """{(declustered, method): TruthCalibration} over CASES series of 300 windows (the quick
    profile's 30 s job), fitted with the default settings: each fit's likelihood judged
    at the true level (scripts/calibration.py judge_truth)."""
    tail, theta = request.param
    truth = pc.true_level(tail, theta, Q)
    out = {}
    for declustered in (True, False):
        fits = [f for f, *_ in pc.dependent_cases(tail, CASES, WINDOWS, 1, theta=theta, declustered=declustered,
                                                  seed=7)]
        for method in pc.METHODS:
            out[declustered, method] = pc.judge_truth(fits, Q, truth, method)
    return request.param, out


def assert_calibrated(c, context, spread=(0.6, 1.7)):
    """Two-sided: the truth above the 95 % interval (an under-estimate) and below it (an
    over-estimate) each in at most 10 % of the series (2.5 % expected; 40 series), the PIT
    uniform, the interval neither too narrow (mean r² at most 1.3) nor grossly wide (at
    least 0.3; measured 0.45-1.0: docs/pwcet.md), the estimate near the truth (median
    0.85-1.2 of it, 80 % of the series within `spread` of it)."""
    assert c.passed, (context, c.row())
    assert c.high_share <= 0.1 and c.low_share <= 0.1, (context, c.row())
    assert 0.3 <= c.dispersion <= 1.3, (context, c.row())
    assert 0.85 < c.sharpness_median < 1.2, (context, c.row())
    assert spread[0] < c.sharpness_low and c.sharpness_high < spread[1], (context, c.row())


def assert_broken(c, method, context):
    """×1.5 and /1.5 fail the PIT test, and their PIT values lean the way they are wrong."""
    assert not c.passed, (context, c.row())
    lean = float(np.mean(c.pit))
    if method == "inflated":
        assert c.sharpness_median > 1.2 and lean < 0.3, (context, c.row())
    else:
        assert c.sharpness_median < 0.8 and lean > 0.6, (context, c.row())


def test_the_estimate_is_near_the_truth_and_its_interval_is_calibrated(judged):
    """300 windows: 30-40 clusters. The shape penalty (pwcet_pot.shape_penalty) removes the
    small-sample bias of the maximum-likelihood shape, which without it put the estimate
    at 0.80-0.92 of the truth and the truth above the interval in 5-8 % of the series."""
    (tail, theta), out = judged
    assert_calibrated(out[True, "calibrated"], (tail, theta))


@pytest.mark.parametrize("method", ["inflated", "deflated"])
def test_an_inflated_or_deflated_level_fails_the_same_test(judged, method):
    (tail, theta), out = judged
    assert_broken(out[True, method], method, (tail, theta))


def test_without_declustering_the_interval_is_too_narrow(judged):
    """Every exceedance taken as its own cluster: dependent exceedances count as
    independent evidence, so the signed roots at the truth spread about 1/θ times as much
    (mean r² 2.4-2.8 times the declustered one's measured, θ = 0.4); on independent
    series the two are the same method."""
    (tail, theta), out = judged
    good, broken = out[True, "calibrated"], out[False, "calibrated"]
    if theta < 1:
        assert broken.dispersion >= 1.8 * good.dispersion, (tail, good.row(), broken.row())
    else:
        assert broken.dispersion == pytest.approx(good.dispersion, rel=0.25), (tail, good.row(), broken.row())


@pytest.mark.parametrize("tail", ["exponential", "bounded"])
def test_at_the_evidence_limit_the_interval_covers_and_without_declustering_it_does_not(tail):
    """1000 windows of 100 cycles (100 s at 1 kHz) and p = 1e-9 a cycle: ten thousand times
    beyond the data, the furthest the evidence rule lets an estimate go. The declustered
    interval is calibrated (both sides; the estimate spread wider than at 33 times, 80 %
    of the series within 0.5-2.5 of the truth), ×1.5 and /1.5 fail, and without
    declustering the interval is too narrow: the test fails it."""
    q = pw.block_probability(1e-9, M)
    truth = pc.true_level(tail, 0.4, q)
    fits = {declustered: [f for f, *_ in pc.dependent_cases(tail, CASES, 1000, 1, theta=0.4,
                                                            declustered=declustered, seed=31)]
            for declustered in (True, False)}
    good = pc.judge_truth(fits[True], q, truth, "calibrated")
    assert_calibrated(good, tail, spread=(0.5, 2.5))
    for method in ("inflated", "deflated"):
        c = pc.judge_truth(fits[True], q, truth, method)
        assert not c.passed, (method, c.row())
        assert (float(np.mean(c.pit)) < 0.4) if method == "inflated" else (float(np.mean(c.pit)) > 0.6), c.row()
    broken = pc.judge_truth(fits[False], q, truth, "calibrated")
    assert not broken.passed and broken.dispersion >= 1.5 * good.dispersion, (good.row(), broken.row())


def test_without_the_shape_penalty_a_short_run_is_optimistic():
    """The method before its small-sample correction (plain maximum likelihood) on the
    same 300-window series: the estimate low (median under 0.92 of the truth) and the
    PIT not uniform, leaning towards the truth above the estimate; the judge sees it."""
    truth = pc.true_level("exponential", 0.4, Q)
    fits = [f for f, *_ in pc.dependent_cases("exponential", CASES, WINDOWS, 1, theta=0.4, seed=7, penalty=0)]
    c = pc.judge_truth(fits, Q, truth, "calibrated")
    assert not c.passed and c.sharpness_median < 0.92 and float(np.mean(c.pit)) > 0.6, c.row()


def test_the_plug_in_predictive_is_judged_and_broken_levels_fail_it():
    """The held-out judge of scripts/calibration.py (the GEV path's) on POT
    fits of dependent series: the levels multiplied or divided by 1.5 fail its PIT and
    reliability tests, and their sharpness shows by how much."""
    cases = pc.dependent_cases("exponential", CASES, WINDOWS, 1, theta=0.4, seed=9)
    good = pc.judge(cases, 1 / WINDOWS, "calibrated")
    assert 0.9 < good.sharpness_median < 1.1, good.row()
    for method in ("inflated", "deflated"):
        c = pc.judge(cases, 1 / WINDOWS, method)
        assert not c.passed and not c.reliable, c.row()
        assert (c.sharpness_median > 1.3) if method == "inflated" else (c.sharpness_median < 0.75)


def test_a_dependent_heavy_tail_is_still_the_finding():
    """Pareto window maxima (ξ = 0.5) in runs: never an estimate; mostly the finding
    itself (heavy-tail), otherwise a refusal too (the shape's interval from ~40 clusters
    can hold 0: too-uncertain; or the cluster peaks fail a check)."""
    codes = []
    for seed in range(8):
        x = 1_000 * pc.draw_dependent(np.random.default_rng(seed), 1000, "heavy", 0.4)
        r = pw.analyse(x, M, 1e-9, interval_ns=1_000_000)
        assert r.by_pot and not r.applicable and r.level_ns is None, r.summary()
        codes.append(r.code)
        if r.code == "heavy-tail":
            assert r.tail == "heavy" and r.shape_low > 0 and "heavy" in r.reason
    assert codes.count("heavy-tail") >= 4 and set(codes) <= {"heavy-tail", "too-uncertain", "not-iid"}, codes


def test_a_dependent_bulk_with_rare_stalls_is_still_a_mixture():
    rng = np.random.default_rng(4)
    x = 20_000 + 1_000 * pc.draw_dependent(rng, WINDOWS, "exponential", 0.4)
    hit = rng.random(WINDOWS) < 0.02
    x = np.where(hit, rng.uniform(1_000_000, 12_000_000, WINDOWS), x)
    r = pw.analyse(x, M, 1e-9, interval_ns=1_000_000)
    assert r.code == "mixture" and not r.by_pot, r.summary()


def test_too_few_clusters_say_run_longer():
    """Long bursts (θ = 0.1): 300 windows hold too few clusters for a fit. When the two
    halves of the run look alike, the remedy is a longer run (too-few-exceedances); when
    they differ as well, the answer stays the block maxima's not-iid (a drift is not
    cured by running longer)."""
    codes = {}
    for seed in (0, 1):      # seed 0: the halves look alike; seed 1: they differ
        x = 20_000 + 1_000 * pc.draw_dependent(np.random.default_rng(seed), WINDOWS, "exponential", 0.1)
        r = pw.analyse(x, M, 1e-9, interval_ns=1_000_000)
        assert r.by_pot and r.checks[0].passed is False and any(c.name == "enough cluster peaks" for c in r.checks)
        codes[r.checks[1].passed] = r
    alike, drift = codes[True], codes[False]
    assert alike.code == "too-few-exceedances" and alike.length_helps, alike.summary()
    assert "run longer" in alike.reason and alike.to_json()["run_needed_s"] is not None
    assert drift.code == "not-iid" and not drift.length_helps and "identical distribution" in drift.reason


def test_compare_reads_a_pot_answer():
    """compare_pwcet bootstraps a POT estimate from its own fit (the clusters' count and
    the GPD): twice the scale under the same bursts is called worse, the reverse better."""
    a = 20_000 + 1_000 * pc.draw_dependent(np.random.default_rng(0), 600, "exponential", 0.4)
    b = 20_000 + 2_000 * pc.draw_dependent(np.random.default_rng(50), 600, "exponential", 0.4)
    ra, rb = (pw.analyse(x, M, 1e-5, interval_ns=1_000_000) for x in (a, b))
    assert ra.by_pot and rb.by_pot and ra.applicable and rb.applicable, (ra.summary(), rb.summary())
    assert pw.compare_pwcet(ra, rb, 1e-5, draws=100)["call"] == "worse"
    assert pw.compare_pwcet(rb, ra, 1e-5, draws=100)["call"] == "better"


def test_a_level_inside_the_bulk_is_not_the_tail_models():
    x = 20_000 + 1_000 * pc.draw_dependent(np.random.default_rng(101), WINDOWS, "exponential", 0.4)
    r = pw.analyse(x, M, 1e-2, interval_ns=1_000_000)       # 63 % of the windows: far below any threshold
    assert r.by_pot and r.code == "below-threshold" and not r.applicable and not r.length_helps, r.summary()


def test_the_return_level_chart_of_a_pot_answer():
    """The report's chart of a POT answer: the cluster peaks at their return periods, the
    fitted curve rising to the mark (the estimate with its interval)."""
    from rtgauge.report.svg import return_level_plot
    x = 20_000 + 1_000 * pc.draw_dependent(np.random.default_rng(101), WINDOWS, "exponential", 0.4)
    r = pw.analyse(x, M, 1e-6, interval_ns=1_000_000)
    assert r.by_pot and r.applicable, r.summary()
    d = pw.plot_data(r)
    assert len(d["observed"]) == r.fit.clusters and d["mark"][1] == pytest.approx(r.level_ns / 1000)
    periods = [p for p, _ in d["curve"]]
    levels = [v for _, v in d["curve"]]
    assert periods == sorted(periods) and levels == sorted(levels) and levels[-1] == pytest.approx(r.level_ns / 1000)
    assert min(v for _, v in d["observed"]) > r.fit.threshold / 1000
    assert "<svg" in return_level_plot("t", d["observed"], d["curve"], d["band"], d["mark"])
