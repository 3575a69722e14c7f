"""The statistics of compare (rtgauge/analysis/compare/noise.py) on synthetic data whose answer
is known: interval coverage, the false-positive rate across many figures after the
Benjamini-Hochberg adjustment, detection of a known shift, the single-round fallbacks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rtgauge.analysis.compare import noise
from test_report_builders import log_linear_bins


def test_interval_of_a_difference_over_rounds_covers_the_true_difference():
    rng = np.random.default_rng(1)
    hits, n = 0, 300
    for _ in range(n):
        a = rng.normal(1000, 30, 4)
        b = rng.normal(1050, 30, 4)
        lo, hi = noise.compare_rounds(list(a), list(b)).interval
        hits += lo <= 50 <= hi
    assert 0.92 <= hits / n <= 0.99


def test_many_figures_of_an_a_a_comparison_rarely_flag_anything():
    """30 figures, 3 rounds each side, nothing changed: after the adjustment the chance
    that any figure is called is about alpha (5 %), not 1 - 0.95^30 = 79 %."""
    rng = np.random.default_rng(2)
    reps, any_flag, raw_flags = 200, 0, 0
    for _ in range(reps):
        ps = []
        for f in range(30):
            level = 10 + 100 * f
            ps.append(noise.compare_rounds(list(rng.normal(level, level * 0.05, 3)),
                                           list(rng.normal(level, level * 0.05, 3))).p_value)
        raw_flags += sum(p < 0.05 for p in ps) > 0
        any_flag += min(noise.adjust(ps)) < 0.05
    assert raw_flags / reps > 0.5            # unadjusted: most comparisons flag something
    assert any_flag / reps <= 0.085           # adjusted: about alpha


def test_a_known_shift_is_called_with_its_size():
    rng = np.random.default_rng(3)
    a, b = list(rng.normal(2000, 40, 4)), list(rng.normal(2400, 40, 4))
    r = noise.compare_rounds(a, b)
    assert r.p_value < 0.005 and r.interval[0] < 400 < r.interval[1] and r.interval[0] > 0
    assert r.noise_floor < 200 and "Welch" in r.method
    # one round on one side borrows the other side's variance
    r1 = noise.compare_rounds(a, [2400.0])
    assert r1.p_value < 0.05 and "borrows" in r1.method


def test_identical_quantised_rounds_are_no_difference_not_a_division_by_zero():
    r = noise.compare_rounds([31.0, 31.0, 31.0], [31.0, 31.0, 31.0])
    assert r.p_value == 1.0 and r.interval[0] < 0 < r.interval[1]
    r = noise.compare_rounds([31.0, 31.0, 31.0], [32.0, 32.0, 32.0])    # one quantum apart
    assert r.p_value > 0.001


def test_the_clock_step_is_read_from_the_histogram_and_floors_the_spread():
    """Ground truth: samples of a short call taken with a clock that steps by 10 ns
    (read up to 1 ns late, as a scaled TSC does) cluster 10 ns apart; wide bins of a
    log-linear histogram, or too few clusters, say nothing about the clock."""
    rng = np.random.default_rng(5)
    true = rng.uniform(15, 65, 5000)
    read = np.floor(true / 10) * 10 + rng.integers(0, 2, len(true))
    values, counts = np.unique(read, return_counts=True)
    bins = [[int(v), int(v), int(c)] for v, c in zip(values, counts)]
    assert noise.clock_step(bins) == 10.0
    assert noise.clock_step([[5000, 5039, 3], [5040, 5079, 2], [5080, 5119, 1]]) == 1.0
    assert noise.clock_step([[20, 20, 5], [30, 30, 5]]) == 1.0 and noise.clock_step(None) == 1.0
    # a maximum that read 40 ns in every round of one run and 31 ns in every round of the
    # other (one clock step apart): at a 1 ns resolution that looked certain; at the
    # clock's step it is a one-step difference the rounds cannot resolve on their own
    assert noise.compare_rounds([40.0] * 3, [31.0] * 3).p_value < 1e-4
    assert noise.compare_rounds([40.0] * 3, [31.0] * 3, step=9.0).p_value > 0.005
    # a real change many steps wide is still called
    assert noise.compare_rounds([40.0, 41.0, 40.0], [400.0, 401.0, 400.0], step=9.0).p_value < 1e-4


def test_maxima_that_read_the_same_in_every_round_are_judged_by_permutation():
    """Seen in an A/A comparison (.ci/run, 2026-11-26): a microbenchmark's maximum over
    2,000 calls of about 22 ns read 31 ns in each of three rounds of one run and 100, 100,
    101 ns in the other's, the runs interleaved. A maximum is one rare sample: it jumps
    between values, and three equal rounds a side happen in 1 of the 20 ways to order six
    rounds. The t-test, given no spread but the clock's step, called it certain."""
    a, b = [31.0] * 3, [100.0, 100.0, 101.0]
    broken = noise.compare_rounds(a, b, step=9.0)               # as compare did before
    assert broken.p_value < 1e-4 and broken.interval[0] > 0
    r = noise.compare_rounds(a, b, step=9.0, extreme=True)
    assert r.p_value == pytest.approx(0.1) and r.interval[0] < 0 < r.interval[1]
    assert "permutation" in r.method and r.extra["permutation_p"] == pytest.approx(0.1)
    assert r.extra["to_decide"].startswith("4 rounds a side could resolve it")      # 2/70 < 0.05
    assert "`rtgauge run --rounds 4`" in r.extra["to_decide"]
    # five rounds a side, every one apart: 2 of the 252 orderings, resolved
    r5 = noise.compare_rounds([31.0] * 5, [100.0] * 5, step=9.0, extreme=True)
    assert r5.p_value == pytest.approx(2 / 252) and r5.interval[0] > 0
    # maxima whose rounds do spread keep the t-test (a 60 % worse maximum over four rounds)
    spread = noise.compare_rounds([100.0, 104.0, 97.0, 102.0], [168.0, 158.0, 165.0, 163.0], extreme=True)
    assert spread.p_value < 1e-3 and "permutation_p" not in spread.extra
    assert noise.permutation_p([1.0, 2.0], [3.0, 4.0]) == pytest.approx(2 / 6)


def test_run_interval_uses_the_bootstrap_with_enough_rounds():
    rng = np.random.default_rng(4)
    x = list(rng.normal(500, 20, 12))
    lo, hi = noise.run_interval(x)
    assert lo < 500 < hi and hi - lo < 40
    assert noise.run_interval([500.0]) is None


def test_single_round_mean_uses_the_standard_errors_and_says_so():
    r = noise.compare_means_within(100.0, 10.0, 10000, 101.0, 10.0, 10000)   # se of the diff 0.141
    assert r.p_value < 1e-6 and "within-run" in r.note
    r = noise.compare_means_within(100.0, 10.0, 100, 101.0, 10.0, 100)       # se 1.41
    assert r.p_value > 0.3


def test_order_statistic_interval_of_p99_contains_the_true_quantile():
    rng = np.random.default_rng(5)
    scale = 10000.0
    true_p99 = -scale * math.log(0.01)
    inside = 0
    for _ in range(40):
        bins = log_linear_bins([int(v) for v in rng.exponential(scale, 20000)])
        lo, hi = noise.quantile_interval(bins, 0.99)
        inside += lo <= true_p99 <= hi
    assert inside >= 34          # 95 % intervals (plus bin width): about 38 of 40


def test_quantile_and_maximum_tests_of_single_rounds():
    rng = np.random.default_rng(6)
    a = [int(v) for v in rng.exponential(10000, 5000)]
    same = [int(v) for v in rng.exponential(10000, 5000)]
    slower_tail = [int(v) for v in rng.exponential(10000, 5000)]
    for i in range(0, 5000, 50):          # 2 % of the samples become 10x later
        slower_tail[i] *= 10
    wa = noise.Within(5000, None, log_linear_bins(a), 0.99)
    for other, changed in ((same, False), (slower_tail, True)):
        wb = noise.Within(5000, None, log_linear_bins(other), 0.99)
        q = noise.compare_quantile_within(wa, wb, float(np.percentile(a, 99)), float(np.percentile(other, 99)))
        m = noise.compare_max_within(wa, wb, float(max(a)), float(max(other)))
        assert (q.p_value < 1e-3) is changed
        assert (m.p_value < 1e-3) is changed and m.interval is None


def test_rates_of_missed_deadlines():
    assert noise.compare_rates(0, 30000, 30, 30000).p_value < 1e-6
    assert noise.compare_rates(5, 30000, 6, 30000).p_value > 0.5
    r = noise.compare_rates(10, 10000, 40, 10000)
    lo, hi = r.extra["rate_ratio_interval"]
    assert lo < 4 < hi and lo > 1
    assert noise.compare_rates(0, 1000, 0, 1000).p_value == 1.0
