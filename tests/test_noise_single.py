"""Single-round comparisons (one engine invocation on each side) on synthetic runs whose
answer is known (rtgauge/analysis/compare/regress.py test_figure, noise.compare_single,
docs/compare.md "Single runs"):

- A/A: two runs drawn from one machine whose figures drift between runs by the
  documented amount (noise.DRIFT, a Student t of the log ratio) and between batches
  inside a run: at the default level (alpha 0.05, Benjamini-Hochberg) a comparison of
  a dozen figures calls something in about 5 % of the repetitions, not more;
- the deliberately broken method, the within-run tests alone (what compare did before),
  calls something in most A/A repetitions of the same data;
- a real shift well beyond the drift is called worse; one inside it is not, and a gate
  on it says undecided with the rounds that would decide.

These runs drift between runs and hardly at all inside one (5 % between batches), a
world where a run's own batches cannot see the drift: this file tests the drift model,
which compares the figures whose runs hold no batches (every figure but a latency p99
and maximum with enough windows), so the batches are switched off here (the fixture
below). tests/test_compare_batches.py tests the batches on real runs."""

from __future__ import annotations

import math

import numpy as np

from rtgauge.analysis.compare import noise
from rtgauge.analysis.compare import regress
from rtgauge.analysis.compare.regress import SAME, Change, Figure, parse_rule, within_run
from test_report_builders import log_linear_bins

import pytest

FAMILIES = ("avg_latency", "p99_latency", "max_latency", "micro_avg")


@pytest.fixture(autouse=True)
def drift_model_only(monkeypatch):
    """Every figure through the drift model (regress.single_round_batches off)."""
    monkeypatch.setattr(regress, "BATCHED", {})
BATCHES, PER_BATCH = 20, 200


def synthetic_run(rng, level: float, family: str, shift: float = 1.0) -> Figure:
    """One single-round figure of a run: BATCHES batches of PER_BATCH lognormal samples;
    the run's level drifts by the documented run-to-run drift of the family (t with
    drift_df(family) degrees of freedom), each batch's level by 5 % more, and `shift` multiplies
    the whole candidate (the known answer)."""
    run_level = level * shift * math.exp(noise.DRIFT[family] * rng.standard_t(noise.drift_df(family)))
    batches = [run_level * math.exp(rng.normal(0, 0.05)) * rng.lognormal(0, 0.5, PER_BATCH) for _ in range(BATCHES)]
    x = np.concatenate(batches)
    bins = engine_bins(x)
    value = float(np.mean(x))
    if family == "p99_latency":
        value = float(np.percentile(x, 99))
    elif family == "max_latency":
        value = float(np.max(x))
    f = Figure(f"{family}:x", family, family, value, "ns", rounds=[value],
               within=noise.Within(len(x), float(np.std(x, ddof=1)), bins, 0.99 if family == "p99_latency" else None))
    if family == "max_latency":
        f.windows = [float(np.max(b)) for b in batches]
    return f


def engine_bins(x: np.ndarray) -> list[list[int]]:
    """log_linear_bins (the engine's 128 sub-buckets per power of two), vectorised."""
    v = np.maximum(1, x.astype(np.int64))
    shift = np.where(v < 128, 0, np.floor(np.log2(np.maximum(v, 1))).astype(np.int64) - 7)
    lo = (v >> shift) << shift          # a bucket's lower edge has the same power of two as its values
    keys, counts = np.unique(lo, return_counts=True)
    width = np.int64(1) << np.where(keys < 128, 0, np.floor(np.log2(keys)).astype(np.int64) - 7)
    return [[int(a), int(a + w - 1), int(c)] for a, w, c in zip(keys, width, counts)]


def comparison(rng, shift: float = 1.0):
    """A dozen figures (three of each family) of a baseline and a candidate."""
    pairs = []
    for i, family in enumerate(FAMILIES * 3):
        level = 2000.0 * (1 + i)
        pairs.append((synthetic_run(rng, level, family), synthetic_run(rng, level, family, shift)))
    return pairs


def any_call(ps: list[float]) -> bool:
    return min(noise.adjust(ps)) < 0.05


def test_a_a_with_between_run_drift_is_called_at_about_the_nominal_rate_and_within_run_only_fails():
    rng = np.random.default_rng(18)
    reps, called, broken = 60, 0, 0
    for _ in range(reps):
        pairs = comparison(rng)
        called += any_call([regress.test_figure(b, a).p_value for a, b in pairs])
        broken += any_call([within_run(b, a).p_value for a, b in pairs])
    assert called / reps <= 0.1, called           # about alpha = 5 %
    assert broken / reps >= 0.5, broken          # within-run uncertainty alone calls the drift a change


def test_single_round_results_say_what_they_rest_on():
    rng = np.random.default_rng(3)
    a, b = synthetic_run(rng, 2000.0, "p99_latency"), synthetic_run(rng, 2000.0, "p99_latency")
    r = regress.test_figure(b, a)
    assert "drift" in r.method and r.extra["drift"] == noise.DRIFT["p99_latency"]
    assert r.interval[0] < r.difference < r.interval[1]
    assert r.extra["within_p_value"] is not None and r.p_value >= r.extra["within_p_value"]


def test_a_shift_far_beyond_the_drift_is_called_and_one_inside_it_is_undecided():
    rng = np.random.default_rng(5)
    for family in FAMILIES:
        big = math.exp(15 * noise.DRIFT[family])         # far beyond the documented drift
        hits = sum(regress.test_figure(synthetic_run(rng, 3000.0, family, big), synthetic_run(rng, 3000.0, family)).p_value
                   < 0.05 for _ in range(20))
        assert hits >= 17, (family, hits)
    # a p99 twice as high from one round each is inside the drift: not called, and a gate
    # of +20 % on it cannot be decided; the rounds that would decide are said
    a = synthetic_run(np.random.default_rng(7), 3000.0, "p99_latency")
    rule = parse_rule("p99_latency>+20%")
    for factor, advice in ((2.0, "--rounds"), (1.3, "more than 30 rounds a side")):
        b = Figure(a.key, a.family, a.label, a.value * factor, "ns", rounds=[a.value * factor], within=a.within)
        r = regress.test_figure(b, a)
        assert r.p_value > 0.05
        c = Change(b, a.value, b.value, SAME, r.note, r, q_value=r.p_value, base_figure=a)
        assert rule.trips(c) is None
        text = rule.undecided(c)
        assert text and advice in text, text
        assert parse_rule("p99_latency>+150%").undecided(c) is None      # within the rule: passes


def test_engine_bins_are_the_engines():
    x = np.random.default_rng(1).lognormal(8, 2, 3000)
    assert engine_bins(x) == log_linear_bins([max(1, int(v)) for v in x])


def test_rounds_to_decide_grow_as_the_change_shrinks():
    tau = noise.DRIFT["micro_avg"]
    n_big, n_small = noise.rounds_to_decide(math.log(1.5), tau), noise.rounds_to_decide(math.log(1.2), tau)
    assert n_big is not None and n_small is not None and 2 <= n_big < n_small
    assert noise.rounds_to_decide(math.log(1.0001), tau) is None


def test_window_maxima_test_sees_a_persistent_tail_change_not_one_stall():
    rng = np.random.default_rng(9)
    base = list(rng.lognormal(math.log(50_000), 0.3, 30))
    stall = list(rng.lognormal(math.log(50_000), 0.3, 30))
    stall[7] = 5_000_000                                        # one host stall: one window
    spinner = [v + 3_000_000 for v in rng.lognormal(math.log(50_000), 0.3, 30)]   # every window
    assert noise.compare_windows(base, stall, max(base), max(stall)).p_value > 0.5
    assert noise.compare_windows(base, spinner, max(base), max(spinner)).p_value < 1e-6
