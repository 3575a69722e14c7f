"""The verdict against a job's budget (rtgauge/analysis/run/verdict.py): exact binomial
bounds (with their coverage checked by simulation, beside a broken Wald bound that
fails it), exceedances counted from the histogram against the samples themselves,
yes / no / undecided on runs with a known answer, the budget's sources and its bad
input, and the rating's "not rated" reasons."""

from __future__ import annotations

from conftest import cli
import math

import numpy as np
import pytest

from rtgauge.analysis.run.headline import MIN_RATED_CYCLES, headline
from rtgauge.records import Measurement
from rtgauge.analysis.run.verdict import (
    NO, UNDECIDED, YES, Budget, cycles_needed, exceedances, judge, make_budget, rate_bounds,
)
from rtgauge.errors import EXIT_GATE_TRIPPED, EXIT_INCOMPLETE, EXIT_OK, EXIT_UNDECIDED, UserError, gate_status
from rtgauge.profiles import parse_profile
from rtgauge.store import open_store
from test_report_builders import (
    RATED_N, SYSTEM, full_run_documents, latency_document, latency_samples, store_run,
)


def stored(tmp_path, docs, system=None, status="complete"):
    url = f"sqlite:///{tmp_path / 'v.db'}"
    rid = store_run(url, docs, system=system, status=status)
    with open_store(url) as s:
        return s.get_run(rid)


# ---- exact bounds ------------------------------------------------------------------

def wald_upper(k: int, n: int) -> float:
    """The textbook normal approximation: the broken method (0 at k = 0)."""
    p = k / n
    return p + 1.645 * math.sqrt(p * (1 - p) / n)


def coverage(upper, p: float, n: int, draws: int = 4000) -> float:
    ks = np.random.default_rng(7).binomial(n, p, draws)
    return float(np.mean([upper(int(k), n) >= p for k in ks]))


def test_clopper_pearson_bounds_hold_their_level_and_wald_does_not():
    # k = 0: the upper bound is 1 - alpha^(1/n) exactly ("rule of three": about 3/n)
    assert rate_bounds(0, 1000)[1] == pytest.approx(1 - 0.05 ** (1 / 1000), rel=1e-9)
    assert rate_bounds(0, 1000)[0] == 0.0
    # the bound solves P(X <= k | upper) = alpha
    from scipy.stats import binom
    low, high = rate_bounds(7, 5000)
    assert binom.cdf(7, 5000, high) == pytest.approx(0.05, rel=1e-6)
    assert binom.sf(6, 5000, low) == pytest.approx(0.05, rel=1e-6)
    # a rare event at the user's default confidence: the exact bound covers the true rate in
    # at least 95 % of runs; the Wald bound (zero when nothing was seen) falls short
    p, n = 1e-3, 2000
    assert coverage(lambda k, n: rate_bounds(k, n)[1], p, n) >= 0.95
    assert coverage(wald_upper, p, n) < 0.9


def test_cycles_needed_is_the_shortest_run_that_bounds_the_rate():
    r = 1e-4
    n = cycles_needed(0, 1000, r)
    assert rate_bounds(0, n)[1] <= r < rate_bounds(0, int(n * 0.99))[1]
    assert n == pytest.approx(math.log(0.05) / math.log(1 - r), rel=0.01)      # ~ 3 / r
    assert cycles_needed(10, 1000, 1e-3) is None       # observed 1 %: never below 0.1 %


# ---- counting ----------------------------------------------------------------------

@pytest.mark.parametrize("limit_us", [9.0, 12.0, 20.0, 39.0])
def test_exceedances_from_the_histogram_match_the_samples(limit_us):
    doc = latency_document(cpus=2, n=3000, spike_ns=40000)
    m = Measurement.from_dict({"name": "latency@idle", "test": "latency", "ok": True, "metrics": doc["metrics"]})
    samples = latency_samples(100, 3000, 8000, 40000) + latency_samples(101, 3000, 8000 * 1.2, None)
    truth = sum(v > limit_us * 1000 for v in samples)
    k, exact = exceedances(m, limit_us * 1000)
    assert k >= truth                              # never fewer (a straddling bin counts whole)
    assert k <= truth + max(3, truth * 0.05)       # bins are ~1 % wide: nearly exact
    assert exact or k > truth or k == truth


# ---- verdicts with a known answer ---------------------------------------------------

def test_a_hard_budget_broken_by_observed_wakeups_is_no(tmp_path):
    run = stored(tmp_path, full_run_documents(n=RATED_N))      # spikes of 40 µs idle, 60 µs loaded
    v = judge(run, make_budget(30))
    assert v.answer == NO and v.exit_status == EXIT_GATE_TRIPPED
    assert v.worst_us == pytest.approx(60.0) and v.margin_us == pytest.approx(-30.0)
    engine = {j.name: j for j in v.jobs}
    assert engine["latency@idle"].exceedances >= 1 and engine["latency@idle"].answer == NO
    assert "no —" in v.headline and "margin -30.0 µs" in v.headline


def test_a_miss_rate_budget_is_decided_by_the_exact_bounds(tmp_path):
    run = stored(tmp_path, full_run_documents(n=RATED_N))
    # a few spikes in 20,000 cycles: well within 1 %, well above 1e-6
    assert judge(run, make_budget(30, miss_rate=0.01)).answer == YES
    assert judge(run, make_budget(30, miss_rate=0.01)).exit_status == EXIT_OK
    assert judge(run, make_budget(9, miss_rate=1e-6)).answer == NO
    # 1 spike in 20,000: 5e-5 observed, bound up to ~2.4e-4; allowed 1e-4 cannot be decided
    v = judge(run, make_budget(39, miss_rate=1e-4))
    assert v.answer == UNDECIDED and v.exit_status == EXIT_UNDECIDED
    assert all(j.needed_cycles and j.needed_cycles > 20_000 for j in v.jobs if j.answer == UNDECIDED)
    assert "deciding it needs about" in " ".join(v.reasons)


def test_no_exceedance_without_a_credible_worst_case_is_not_enough_evidence(tmp_path):
    run = stored(tmp_path, full_run_documents(n=RATED_N))      # five window maxima: no credible pWCET
    v = judge(run, make_budget(1000))
    assert v.answer == UNDECIDED and v.margin_us == pytest.approx(940.0)
    j = next(j for j in v.jobs if j.tool == "engine")
    assert j.exceedances == 0 and j.worst_case["credible"] is False
    assert "no credible worst case" in j.why and "cycles" in j.why


def test_an_incomplete_run_fails_closed(tmp_path):
    run = stored(tmp_path, full_run_documents(n=RATED_N), status="interrupted")
    v = judge(run, make_budget(30, miss_rate=0.01))
    assert v.incomplete and v.exit_status == EXIT_INCOMPLETE


def test_gate_status_precedence():
    assert gate_status([]) == EXIT_OK
    assert gate_status([EXIT_OK, EXIT_UNDECIDED]) == EXIT_UNDECIDED
    assert gate_status([EXIT_UNDECIDED, EXIT_INCOMPLETE]) == EXIT_INCOMPLETE
    assert gate_status([EXIT_UNDECIDED, EXIT_INCOMPLETE, EXIT_GATE_TRIPPED]) == EXIT_GATE_TRIPPED


# ---- the budget as input -----------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    ((0.5,), "out of range"),
    ((2000, 1000), "longer than its period"),
    ((100, None, 1.5), "not a fraction"),
    ((None, 1000), "needs the budget's latency"),
    (("fast",), "must be numbers"),
    ((True,), "not true/false"),
])
def test_bad_budgets_are_one_sentence(args, words):
    with pytest.raises(UserError, match=words):
        make_budget(*args)


def test_a_profile_carries_a_budget_table():
    base = "name='p'\n[[jobs]]\nname='a'\ntest='latency'\n"
    p = parse_profile(base + "[budget]\nlatency_us=80\nperiod_us=1000\nmiss_rate=1e-6\n", "t.toml")
    assert p.budget == Budget(80.0, 1000.0, 1e-6, "profile t.toml [budget]")
    with pytest.raises(UserError, match="unknown key 'latency'"):
        parse_profile(base + "[budget]\nlatency=80\n", "t.toml")
    assert parse_profile(base, "t.toml").budget is None


# ---- the rating respects the evidence ----------------------------------------------

def test_a_short_idle_only_virtualised_run_is_not_rated_with_each_reason(tmp_path):
    docs = [d for d in full_run_documents(n=1000) if d[0]["name"].startswith("latency@idle")]
    system = dict(SYSTEM, virtualization={"vm": True, "hypervisor": "KVM", "evidence": ["CPU flag 'hypervisor'"]})
    r = headline(stored(tmp_path, docs, system=system))["rating"]
    assert r.stars is None and r.glyphs == "not rated"
    text = " ".join(r.flags)
    assert "too short" in text and f"{MIN_RATED_CYCLES:,}" in text
    assert "idle only" in text and "virtualised (KVM)" in text and "bare metal" in text
    assert r.unrated_class.startswith("hard real-time")


def test_a_cross_check_that_disagrees_withholds_the_rating_and_uses_the_worse_figure(tmp_path):
    docs = full_run_documents(n=RATED_N)
    # cyclictest saw a wake-up 16 times later than our engine's worst
    idle_ct = next(d for j, d in docs if j["name"] == "latency@idle/cyclictest")
    bins = idle_ct["metrics"]["ti"]["histogram"]["bins"]
    bins.append([640000, 640999, 1])
    idle_ct["metrics"]["ti"]["max"] = 640000
    idle_ct["metrics"]["ti"]["count"] += 1
    r = headline(stored(tmp_path, docs))["rating"]
    assert r.stars is None
    assert any("cross-check disagrees" in f and "640.0 µs (cyclictest)" in f for f in r.flags)
    assert "worst-case wake-up latency 640.0 µs" in " ".join(r.reasons)
    # with agreeing tools the same run is rated
    (tmp_path / "agree").mkdir()
    assert headline(stored(tmp_path / "agree", full_run_documents(n=RATED_N)))["rating"].stars == 5


def test_show_gives_the_verdict_and_the_rating_in_json_and_its_exit_status(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    url = f"sqlite:///{tmp_path / 'v.db'}"
    rid = store_run(url, full_run_documents(n=RATED_N))
    env = dict(os.environ, PYTHONPATH=str(root), XDG_CONFIG_HOME=str(tmp_path))   # no user config file
    env.pop("RTGAUGE_CONFIG", None)

    def show(*extra):
        return cli(["show", str(rid), "--db", url, *extra], timeout=300, env=env, cwd=root)
    p = show("--json", "--budget-us", "30", "--miss-rate", "0.01")
    assert p.returncode == EXIT_OK, p.stderr
    doc = json.loads(p.stdout)
    assert doc["verdict"]["answer"] == YES and doc["verdict"]["budget"]["miss_rate"] == 0.01
    assert doc["rating"]["rated"] is True and doc["rating"]["stars"] == 5
    p = show("--budget-us", "30")
    assert p.returncode == EXIT_GATE_TRIPPED and "Can it carry the job? no" in " ".join(p.stdout.split())
    p = show("--budget-us", "0")
    assert p.returncode == 2 and "out of range" in p.stderr and "Traceback" not in p.stderr
