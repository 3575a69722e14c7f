"""The probable worst case (rtgauge/analysis/pwcet.py) against ground truth: block maxima
of distributions whose tail is known analytically (light, exponential and heavy), series
that break the conditions (a shifted second half, autocorrelated maxima), raw samples
files, and a stored run measured by the real engine through the CLI."""

from __future__ import annotations

from functools import partial
import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import needs_root, rtgauge
from rtgauge.analysis import pwcet as pw
from rtgauge.analysis.samples import BINARY_DTYPE
from rtgauge.records import Measurement
from rtgauge.store import open_store

ROOT = Path(__file__).resolve().parent.parent
P = 1e-9          # per-cycle exceedance
M = 1000          # cycles a block

# Three per-cycle distributions, each with its exact per-cycle upper quantile and a way to
# draw the maximum of m cycles exactly (inverse transform of F^m: F^-1(U^(1/m))).
TAILS = {
    # light, bounded: F(x) = 1 - (1 - x)^3 on [0, 1] (ξ = -1/3)
    "light (beta)": (lambda p: 1 - p ** (1 / 3),
                     lambda rng, n, m: 1 - (1 - rng.random(n) ** (1 / m)) ** (1 / 3)),
    # exponential (ξ = 0)
    "exponential": (lambda p: -np.log(p),
                    lambda rng, n, m: -np.log1p(-rng.random(n) ** (1 / m))),
    # heavy: Pareto with index 5 (ξ = 0.2)
    "heavy (Pareto 5)": (lambda p: p ** (-1 / 5),
                         lambda rng, n, m: (1 - rng.random(n) ** (1 / m)) ** (-1 / 5)),
}


rtgauge = partial(rtgauge, timeout=900)     # a watchdog: its slowest calls take minutes on a loaded machine


# ---- the likelihood and the conversions ------------------------------------------

def test_likelihood_and_quantile_are_scipys():
    x = np.linspace(-1.0, 4.0, 60)
    for c in (-0.4, -1e-12, 0.0, 0.25):
        assert pw._loglik(x, c, 0.2, 1.3) == pytest.approx(stats.genextreme.logpdf(x, c, 0.2, 1.3).sum(), rel=1e-9)
        assert pw._isf1(1e-6, c) == pytest.approx(stats.genextreme.isf(1e-6, c), rel=1e-9)
    # a point outside the support has no likelihood
    assert pw._loglik(np.array([10.0]), 0.5, 0.0, 1.0) == -np.inf
    # the Anderson-Darling distance is scipy's (goodness_of_fit with every parameter given)
    y = np.sort(stats.genextreme.rvs(-0.1, 5, 2, size=80, random_state=1))
    fit = pw.fit_gev(y)
    ref = stats.goodness_of_fit(stats.genextreme, y, known_params={"c": fit.c, "loc": fit.loc, "scale": fit.scale},
                                statistic="ad", n_mc_samples=9, rng=0)
    assert pw._ad(y, fit.cdf) == pytest.approx(ref.statistic, rel=1e-9)


def test_block_probability_and_run_length():
    # (1 - p)^m computed directly for a p where the direct form is still exact enough
    assert pw.block_probability(1e-3, 1000) == pytest.approx(1 - (1 - 1e-3) ** 1000, rel=1e-12)
    assert pw.block_probability(1e-12, 1000) == pytest.approx(1e-9, rel=1e-6)
    r = pw.Pwcet("x", "samples", 1e-3, 100, 1_000_000, 50, 1.0, True, None)
    # half the runs of ln2/p cycles (1 ms each) see a cycle above the level
    assert r.run_to_reach_s == pytest.approx(np.log(2) / -np.log1p(-1e-3) * 1e-3, rel=1e-12)
    assert (1 - 1e-3) ** (r.run_to_reach_s / 1e-3) == pytest.approx(0.5)
    assert r.return_period_s == pytest.approx(1.0)
    assert pw.once_per(3600) == "once per hour" and pw.once_per(86400 * 11.574) == "once per 11.6 days"


# ---- ground truth: the interval covers the true level, the estimate is close -------

# The widest median interval (high - low, relative to the true level) each tail may give
# from 100 blocks at 10^4 x beyond the data: the honest width is about 0.05, 1.6 and 5
# (the heavier the tail, the less 100 blocks say about it); an interval that covers by
# being much wider than that is useless.
WIDTH = {"light (beta)": 0.15, "exponential": 2.5, "heavy (Pareto 5)": 8.0}


def test_interval_covers_the_true_level_for_light_exponential_and_heavy_tails():
    """100 blocks of 1000 cycles, level at 1e-9 per cycle (ten thousand times beyond the
    data): over 10 seeds a tail, the 95 % interval must hold the true level in close to
    95 % of the cases — at least 26 of 30 (the chance of fewer with a true 95 % coverage
    is 2 %), and at least 8 of 10 for every tail; and it must not get there by being
    uselessly wide (median upper/lower ratio bounded per tail)."""
    q = pw.block_probability(P, M)
    covered_all = 0
    for name, (isf, draw_max) in TAILS.items():
        truth = isf(P)
        covered, ratios = 0, []
        for seed in range(10):
            x = draw_max(np.random.default_rng(seed), 100, M)
            fit = pw.fit_gev(x)
            level, low, high = pw.return_level(fit, x, q)
            assert low <= level and (high is None or level <= high)
            covered += low <= truth and (high is None or truth <= high)
            ratios.append(np.inf if high is None else (high - low) / truth)
        assert covered >= 8, f"{name}: the interval held the true level in only {covered} of 10 runs"
        assert np.median(ratios) < WIDTH[name], (name, np.median(ratios))
        covered_all += covered
    assert covered_all >= 26, covered_all


@pytest.mark.parametrize("name, tolerance", [("light (beta)", 0.02), ("exponential", 0.10),
                                             ("heavy (Pareto 5)", 0.35)])
def test_estimate_is_close_with_many_blocks(name, tolerance):
    isf, draw_max = TAILS[name]
    x = draw_max(np.random.default_rng(7), 1500, M)
    fit = pw.fit_gev(x)
    level = float(fit.isf(pw.block_probability(P, M)))
    assert abs(level / isf(P) - 1) < tolerance, (level, isf(P))


def test_a_sound_series_is_applicable_and_its_interval_holds_the_truth():
    isf, draw_max = TAILS["exponential"]
    x = 20_000 + 3_000 * draw_max(np.random.default_rng(11), 200, M)    # ns
    r = pw.analyse(x, M, P, interval_ns=1_000_000)
    assert r.applicable, r.reason
    assert [c.name for c in r.checks] == ["independence", "identical distribution", "goodness of fit",
                                          "held-out maximum"]
    assert r.code is None and r.tail == "exponential" and r.shape_low < 0 < r.shape_high
    assert all(c.passed for c in r.checks)
    truth = 20_000 + 3_000 * isf(P)
    assert r.ci_low_ns <= truth <= r.ci_high_ns and r.ci_low_ns <= r.level_ns <= r.ci_high_ns
    assert r.level_ns > r.observed_max_ns
    assert "once per 11.6 days" in r.summary() and "µs" in r.summary()
    j = r.to_json()
    assert j["applicable"] and j["level_ns"] == r.level_ns and j["ci_method"] == "profile likelihood"
    assert json.loads(json.dumps(j)) == j


# ---- the conditions -------------------------------------------------------------------

def test_a_shifted_second_half_is_not_applicable():
    _, draw_max = TAILS["exponential"]
    x = 20_000 + 3_000 * draw_max(np.random.default_rng(3), 200, M)
    x[100:] += 6_000         # two scale units later in the second half
    r = pw.analyse(x, M, P, interval_ns=1_000_000)
    assert not r.applicable and r.level_ns is None
    assert "identical distribution" in r.reason and r.code == "not-iid"
    assert "[not-iid]" in r.summary() and r.to_json()["estimate"] is None


def test_autocorrelated_maxima_are_not_applicable():
    # Gumbel maxima whose ranks follow an AR(1) with coefficient 0.6: the same marginal
    # distribution as independent maxima, but a burst of interference spans several blocks.
    rng = np.random.default_rng(5)
    n, phi = 200, 0.6
    z = np.empty(n)
    z[0] = rng.normal()
    for i in range(1, n):
        z[i] = phi * z[i - 1] + np.sqrt(1 - phi ** 2) * rng.normal()
    x = 20_000 + 3_000 * stats.gumbel_r.ppf(stats.norm.cdf(z))
    r = pw.analyse(x, M, P)
    assert not r.applicable and "independence" in r.reason
    # the same values in a random order are fine
    assert pw.check_independence(rng.permutation(x)).passed


def test_too_few_blocks_is_not_applicable():
    r = pw.analyse(np.arange(20, dtype=float) + 1000, M, P)
    assert not r.applicable and "only 20 block maxima" in r.reason and r.checks[0].passed is False


def test_a_bimodal_series_fails_the_goodness_of_fit():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(20_000, 500, 150), rng.normal(60_000, 500, 150)])
    rng.shuffle(x)
    r = pw.analyse(x, M, P)
    assert not r.applicable and "goodness of fit" in r.reason and r.code == "bad-fit"


# ---- a worst case that is credible or absent ----------------------------------------------

def test_a_heavy_tail_is_the_finding_not_a_number():
    """Pareto index 2 (ξ = 0.5): the shape's interval is above 0, so there is no estimate
    at 1e-9; the level offered instead is within the range the data cover."""
    x = 20_000 * (1 - np.random.default_rng(8).random(300) ** (1 / 100)) ** (-1 / 2)
    r = pw.analyse(x, 100, P, interval_ns=1_000_000)
    assert not r.applicable and r.code == "heavy-tail" and r.tail == "heavy" and r.shape_low > 0
    assert "heavy" in r.reason and "no credible bound at p=1e-09" in r.reason
    assert r.supported_exceedance == pytest.approx(1 / 30_000)
    assert r.supported_low_ns <= r.supported_level_ns <= r.supported_high_ns <= 10 * r.observed_max_ns
    j = r.to_json()
    assert j["code"] == "heavy-tail" and j["estimate"] is None and j["supported"]["level_ns"] == r.supported_level_ns


def test_an_extrapolation_beyond_the_evidence_answers_where_the_data_reach():
    """30,000 cycles of an exponential tail: 1e-9 is 33,000 times beyond them, more than the
    evidence limit (10^4); the answer is the level at 1 / (30,000 x 10^4) and the run length
    that 1e-9 needs (10^5 cycles: 100 s at 1 kHz). A p within the limit gets an estimate."""
    isf, draw_max = TAILS["exponential"]
    x = 20_000 + 3_000 * draw_max(np.random.default_rng(12), 300, 100)
    r = pw.analyse(x, 100, P, interval_ns=1_000_000)
    assert not r.applicable and r.code == "beyond-evidence" and r.tail == "exponential"
    assert r.supported_exceedance == pytest.approx(1 / 3e8)
    truth = 20_000 + 3_000 * isf(1 / 3e8)
    assert r.supported_low_ns <= truth <= r.supported_high_ns
    assert r.run_needed_s == pytest.approx(100.0) and "a run of at least 1.67 minutes" in r.summary()
    assert r.needed_label() == "at least 1.67 minutes"
    ok = pw.analyse(x, 100, 1e-8, interval_ns=1_000_000)
    assert ok.applicable and ok.code is None
    assert ok.ci_low_ns <= 20_000 + 3_000 * isf(1e-8) <= ok.ci_high_ns
    assert ok.ci_high_ns / ok.ci_low_ns <= pw.MAX_SPAN and ok.level_ns <= 100 * ok.observed_max_ns


def test_a_bounded_tail_gets_a_calibrated_estimate():
    isf, draw_max = TAILS["light (beta)"]
    x = 20_000 + 30_000 * draw_max(np.random.default_rng(13), 300, M)
    r = pw.analyse(x, M, P, interval_ns=1_000_000)
    assert r.applicable and r.tail == "bounded" and r.shape_high < 0
    assert r.ci_low_ns <= 20_000 + 30_000 * isf(P) <= r.ci_high_ns


def test_rare_host_stalls_are_a_mixture_and_a_heavy_tail_is_not():
    """A quiet exponential regime plus 2 % of windows with a 1-12 ms stall: refused as a
    mixture, with both regimes in the answer. Twenty samples of a single heavy regime
    (Pareto 5) are called a mixture at most once."""
    _, draw_max = TAILS["exponential"]
    rng = np.random.default_rng(14)
    x = 20_000 + 3_000 * draw_max(rng, 300, 100)
    hit = rng.random(300) < 0.02
    x[hit] = rng.uniform(1e6, 12e6, hit.sum())
    r = pw.analyse(x, 100, P, interval_ns=1_000_000)
    assert not r.applicable and r.code == "mixture", r.summary()
    assert r.mixture["rare_blocks"] == hit.sum() and r.mixture["rare_min_ns"] >= 1e6
    [check] = r.checks                     # the refusal names the check that made it
    assert check.name == "one regime" and check.passed is False and check.p_value < pw.MIX_ALPHA
    _, heavy = TAILS["heavy (Pareto 5)"]
    called = sum(pw.find_mixture(20_000 * heavy(np.random.default_rng(s), 300, 100)) is not None for s in range(20))
    assert called <= 1, called


def test_the_held_out_check_fails_both_ways():
    """A second half far below the first half's fit, or holding one maximum far above what
    it allows (even at the far end of its confidence region): the held-out check fails."""
    _, draw_max = TAILS["exponential"]
    x = 20_000 + 3_000 * draw_max(np.random.default_rng(15), 300, 100)
    assert pw.holdout_check(x).passed
    y = x.copy()
    y[150:] = 20_000 + 0.2 * (y[150:] - 20_000)    # a second half far below the first's
    c = pw.holdout_check(y)
    assert c.passed is False and c.p_value < 0.005 and "lowest level" in c.detail
    x[250] = 20_000 + 3_000 * 40      # e^-40: far beyond what 150 blocks of this tail reach
    c = pw.holdout_check(x)
    assert c.passed is False and c.p_value > 0.995 and "highest level" in c.detail


def test_worst_case_is_the_one_answer():
    doc = Measurement.from_dict(stored_document(3_000, 31))
    r = pw.worst_case(doc)
    (same,) = pw.measurement_pwcet(doc)
    assert r.to_json() == same.to_json()
    j = r.to_json()
    for key in ("observed_max_ns", "estimate", "code", "reason", "exceedance", "run_needed_s", "supported", "tail",
                "method", "summary"):
        assert key in j
    assert pw.worst_case(doc, thread=3) is None


# ---- comparing two systems ------------------------------------------------------------

def test_compare_flags_a_worse_tail_and_not_the_same_one():
    _, draw_max = TAILS["exponential"]
    # 300 blocks a side; B's tail has twice A's scale (its level at 1e-9 is about 2 x further out)
    a = pw.analyse(20_000 + 3_000 * draw_max(np.random.default_rng(21), 300, M), M, P)
    a2 = pw.analyse(20_000 + 3_000 * draw_max(np.random.default_rng(24), 300, M), M, P)
    b = pw.analyse(20_000 + 6_000 * draw_max(np.random.default_rng(23), 300, M), M, P)
    assert a.applicable and a2.applicable and b.applicable
    worse = pw.compare_pwcet(a, b, P, draws=100)
    assert worse["verdict"] == "worse" and worse["ci_low_ns"] > 0 and worse["p_value"] < 0.05
    assert pw.compare_pwcet(b, a, P, draws=100)["verdict"] == "better"
    same = pw.compare_pwcet(a, a2, P, draws=100)
    assert same["verdict"] == "no significant difference" and same["ci_low_ns"] < 0 < same["ci_high_ns"]


# ---- raw samples files through the CLI ----------------------------------------------------

def write_samples(path: Path, fmt: str, threads: int = 2, cycles: int = 30_000, seed: int = 1) -> None:
    """Exponential Ti (10 µs + 2 µs × Exp(1)) per cycle and thread, docs/samples.md."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(cycles):
        for t in range(threads):
            rows.append((t, k, 1_000_000_000 + k * 1_000_000, int(10_000 + 2_000 * rng.exponential()), 50, 0))
    if fmt == "csv":
        path.write_text("thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns\n" + "".join(",".join(map(str, r)) + "\n"
                                                                           for r in rows))
    else:
        arr = np.array([(t, 0, k, d, ti, ts, tw) for t, k, d, ti, ts, tw in rows], dtype=BINARY_DTYPE)
        path.write_bytes(b"RTGSAMP1" + np.array([48, 0], "<u4").tobytes() + arr.tobytes())


@pytest.mark.parametrize("fmt", ["csv", "binary"])
def test_cli_on_a_samples_file(tmp_path, fmt):
    f = tmp_path / f"s.{fmt}"
    write_samples(f, fmt)
    p = rtgauge("pwcet", "--samples", str(f), "--block-cycles", "200", "--exceedance", "1e-6", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    res = {r["label"]: r for r in doc["results"]}
    assert set(res) == {"all threads", "thread 0", "thread 1"}
    for label, r in res.items():
        assert r["blocks"] == 150 and r["block_cycles"] == 200 and r["interval_ns"] == 1_000_000
        # one thread: P(Ti > z) = exp(-(z - 10 µs)/2 µs); both: twice that per cycle
        truth = 10_000 + 2_000 * np.log((2 if label == "all threads" else 1) / 1e-6)
        assert r["applicable"], r["reason"]
        assert r["ci_low_ns"] <= truth <= r["ci_high_ns"], (label, r["ci_low_ns"], truth, r["ci_high_ns"])
        assert abs(r["level_ns"] / truth - 1) < 0.15
    text = rtgauge("pwcet", "--samples", str(f), "--block-cycles", "200", "--exceedance", "1e-6")
    assert text.returncode == 0 and "thread 1" in text.stdout and "once per 16.7 minutes" in text.stdout


@pytest.mark.parametrize("args, words", [
    (["--samples", "{garbage}"], "not an rtgauge samples file"),
    (["--samples", "{missing}"], "no samples file"),
    (["--samples", "{short}", "--exceedance", "0"], "--exceedance must be a probability"),
    (["--samples", "{short}", "--block-cycles", "x"], "--block-cycles must be a whole number"),
    (["3", "--samples", "{short}"], "either a stored RUN"),
    ([], "either a stored RUN"),
    (["7", "--db", "{db}"], "no results database"),   # the shell's missing-database sentence (store/urls.py)
])
def test_bad_input_is_one_sentence(tmp_path, args, words):
    garbage = tmp_path / "g.csv"
    garbage.write_text("hello,world\n1,2\n")
    short = tmp_path / "short.csv"
    write_samples(short, "csv", threads=1, cycles=50)
    paths = {"garbage": garbage, "missing": tmp_path / "nope.bin", "short": short, "db": tmp_path / "none.db"}
    p = rtgauge("pwcet", *[a.format(**paths) for a in args])
    assert p.returncode == 2 and p.stdout == ""
    assert words in p.stderr and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "none.db").exists()


def test_a_short_file_says_why_there_is_no_number(tmp_path):
    f = tmp_path / "s.csv"
    write_samples(f, "csv", threads=1, cycles=2_000)
    p = rtgauge("pwcet", "--samples", str(f), "--block-cycles", "100", "--json")
    r = json.loads(p.stdout)["results"][0]
    assert p.returncode == 0 and not r["applicable"] and r["blocks"] == 20 and "only 20 block maxima" in r["reason"]


# ---- a stored run measured by the real engine ----------------------------------------------

PROFILE = """
name = "pwcet-small"
[settings]
warmup_s = 0.2
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
interval-us = 500
duration-s = 3
window-s = 0.025
priority = 80
"""


@needs_root
@pytest.mark.shared
def test_cli_show_and_report_on_a_real_run(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE)
    db, report = tmp_path / "r.db", tmp_path / "r.html"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--report", str(report))
    assert p.returncode == 0, p.stdout + p.stderr
    with open_store(str(db)) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    m = next(m for m in run["measurements"] if m["name"] == "latency@idle")
    ncpu = len(os.sched_getaffinity(0))

    p = rtgauge("pwcet", str(run["id"]), "--db", str(db), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    (meas,) = [g for g in doc["measurements"] if g["name"] == "latency@idle"]
    res = {r["label"]: r for r in meas["results"]}
    assert set(res) == {"all threads", *(f"thread {i}" for i in range(ncpu))}
    metrics = m["metrics"]
    for label, r in res.items():
        # 25 ms windows of 500 µs cycles: 50 cycles a block; 3 s: 120 full windows, of which
        # those where the thread woke at least once are blocks (a stalled thread has fewer)
        suffix = "" if label == "all threads" else "#" + label.split()[1]
        series = metrics[f"ti_window_max{suffix}"]["max"]
        assert r["block_cycles"] == 50 and r["interval_ns"] == 500_000
        full = [v for v in series[:120] if v is not None]
        assert r["blocks"] == len(full) and r["observed_max_ns"] == max(full)
        assert r["observed_max_ns"] <= metrics[f"ti{suffix}"]["max"]
        assert r["checks"] and r["summary"]
        assert r["summary"].startswith(f"observed max {r['observed_max_ns'] / 1000:,.1f} µs")
        if r["applicable"]:
            assert r["ci_low_ns"] <= r["level_ns"] and r["level_ns"] >= r["observed_max_ns"] * 0.5
            assert r["reason"] is None and r["code"] is None and r["estimate"]["level_ns"] == r["level_ns"]
            assert r["level_ns"] <= 100 * r["observed_max_ns"] and r["ci_high_ns"] <= 100 * r["ci_low_ns"]
        else:
            assert r["reason"] and r["level_ns"] is None and r["code"] in pw.CODES
            assert f"[{r['code']}]" in r["summary"] and r["reason"] in r["summary"]

    # show --json carries the whole-run result, the same as rtgauge pwcet's
    shown = json.loads(rtgauge("show", str(run["id"]), "--db", str(db), "--json").stdout)
    sm = next(x for x in shown["measurements"] if x["name"] == "latency@idle")
    assert sm["pwcet"][0]["label"] == "all threads"
    assert sm["pwcet"][0]["level_ns"] == res["all threads"]["level_ns"]
    assert sm["pwcet"][0] == res["all threads"]
    text = rtgauge("show", str(run["id"]), "--db", str(db)).stdout
    assert "Probable worst case" in text and "latency@idle: observed max" in text

    html = report.read_text()
    assert "id='pwcet'" in html
    # a chart only where there is a fitted level to show
    has_level = res["all threads"]["estimate"] or res["all threads"]["supported"]
    assert ("latency@idle: return levels" in html) == bool(has_level)


# ---- stored measurements: the series, compare, the report --------------------------------

def stored_document(scale: float, seed: int, blocks: int = 200) -> dict:
    """A stored-run document whose whole-run window maxima are exact maxima of 1000
    exponential cycles (20 µs + scale × Exp(1)), plus a last, partial window."""
    from test_store import realistic_document
    d = realistic_document()
    _, draw_max = TAILS["exponential"]
    mx = (20_000 + scale * draw_max(np.random.default_rng(seed), blocks, M)).astype(int).tolist()
    metrics = {k: v for k, v in d["metrics"].items() if "#" not in k}
    metrics["ti_window_max"] = {"unit": "ns", "window_ns": 1_000_000_000, "start_ns": 1, "max": mx + [10_000]}
    metrics["cycles"] = {"unit": "count", "value": blocks * M + 300}   # 300 cycles of a last window
    metrics["skipped"] = {"unit": "count", "value": 0}
    # the whole run's ti holds what its windows hold: its max is theirs
    metrics["ti"] = dict(metrics["ti"], max=max(mx))
    d["metrics"] = metrics
    d["params"] = dict(d["params"], interval_us=1000, threads=1)
    return d


def test_stored_measurements_compare_and_report(tmp_path):
    from test_store import DOCTOR, SYSTEM, realistic_job
    from rtgauge.report.html import render
    db = str(tmp_path / "r.db")
    with open_store(db) as store:
        run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(run_id, realistic_job("latency-idle", "idle"), stored_document(3_000, 31))
        store.add_measurement(run_id, realistic_job("latency-cpu", "cpu"), stored_document(6_000, 32))
        store.finish_run(run_id, "complete", None)
        run = store.get_run(run_id)
    idle, cpu = (next(m for m in run.measurements if m.name == n) for n in ("latency-idle", "latency-cpu"))
    (r,) = pw.measurement_pwcet(idle)
    # the partial last window is not a block
    assert r.blocks == 200 and r.block_cycles == 1000 and r.interval_ns == 1_000_000
    assert r.observed_max_ns == max(idle.metric("ti_window_max").series[:200]) == idle.metric("ti").max
    assert r.applicable, r.reason
    assert r.ci_low_ns <= 20_000 + 3_000 * np.log(1e9) <= r.ci_high_ns
    # compare takes the stored measurements as they are
    c = pw.compare_pwcet(idle, cpu, draws=100)
    assert c["verdict"] == "worse" and c["a"]["level_ns"] == pytest.approx(r.level_ns)
    assert json.loads(json.dumps(c)) == c
    html = render([run])
    section = html[html.index("<section id='pwcet'"):]
    section = section[:section.index("</section>")]
    svgs = [s.split("</svg>")[0] for s in section.split("<span class='pw'><svg")[1:]]  # each plot's wide variant
    assert len(svgs) == 2
    # every block maximum is a point on the plot (plus the legend's point)
    assert svgs[0].count("<circle") == 200 + 1
    assert f"{r.level_ns / 1000:,.1f}" in section and "once per 11.6 days" in section


def test_a_run_past_the_evidence_limit_is_not_told_a_shorter_length():
    """A too-uncertain answer from a run already as long as the evidence limit asks (120 s
    where 1e-9 needs 100 s at 1 kHz): "a run of at least 1.67 minutes" would tell the user
    to do what they did; the answer says the run is past the limit and a longer one
    narrows the interval, and the table says "longer than 2 minutes"."""
    r = pw.Pwcet(label="all threads", source="ti_window_max", exceedance=1e-9, block_cycles=100,
                 interval_ns=1_000_000, blocks=1200, observed_max_ns=2.7e6, applicable=False,
                 reason="the 95% interval at p=1e-09 is wider than 10x", code="too-uncertain",
                 cycles_needed=pw.cycles_needed(1e-9, 100))
    assert r.run_needed_s == pytest.approx(100.0) and r.observed_s == pytest.approx(120.0)
    assert "at least" not in r.summary() and "this run (2 minutes) is past the evidence limit" in r.summary()
    assert r.needed_label() == "longer than 2 minutes"
    short = pw.Pwcet(**{**r.__dict__, "blocks": 300})          # 30 s: the limit is still ahead
    assert "a run of at least 1.67 minutes" in short.summary() and short.needed_label() == "at least 1.67 minutes"
