"""`rtgauge compare`: side by side, the regression view with intervals, --json and
--fail-on for CI (a change trips only when significant; a gate fails closed).

The runs are hand-made (tests/test_report_builders.py) with rounds: each round a
measurement tagged load.round, its figures scaled by a known factor, so the answer of
every comparison is known."""

from __future__ import annotations

import json
import math

import pytest

from rtgauge.analysis.compare.regress import BETTER, GONE, INVALID, SAME, WORSE, compare_runs, parse_rule
from rtgauge.errors import UserError
from rtgauge.store import open_store
from test_report_builders import SYSTEM, DOCTOR, full_run_documents, latency_document
from conftest import rtgauge

# round-to-round noise of a figure: a few per cent, as on a quiet machine
BASE_ROUNDS = (1.00, 1.04, 0.97, 1.02)
NOISY_ROUNDS = (1.05, 0.99, 1.03, 1.02)


def store_rounds(url: str, scales, **kw) -> int:
    """A run whose jobs ran len(scales) rounds, round k with every latency scaled by scales[k]."""
    with open_store(url) as store:
        run_id = store.begin_run(SYSTEM, DOCTOR, "standard", "builtin:standard", ["rtgauge", "run"])
        for k, scale in enumerate(scales, 1):
            for j, d in full_run_documents(scale=scale, **kw):
                if j["test"].startswith("tire"):
                    if k > 1:
                        continue          # one sweep per run
                elif len(scales) > 1:
                    j = dict(j, round=k, load=dict(j["load"], round={"index": k, "of": len(scales)}))
                store.add_measurement(run_id, j, d)
        store.finish_run(run_id, "complete", "")
        return run_id


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('compare') / 'r.db'}"
    base = store_rounds(url, BASE_ROUNDS)
    same = store_rounds(url, BASE_ROUNDS)                                  # identical figures
    noisy = store_rounds(url, NOISY_ROUNDS)                                # other draws of the same noise
    worse = store_rounds(url, [1.6 * s for s in NOISY_ROUNDS], misses=30, tire_cost=320, pi_spin_pass=True)
    return url, base, same, noisy, worse


def runs(url, *ids):
    with open_store(url) as s:
        return [s.get_run(i) for i in ids]


def test_identical_and_noisy_runs_show_no_significant_difference(db):
    url, base, same, noisy, _ = db
    a, b, c = runs(url, base, same, noisy)
    assert [ch.figure.label for ch in compare_runs(a, b) if ch.call != SAME] == []
    changes = compare_runs(a, c)
    assert [ch.figure.label for ch in changes if ch.call != SAME] == []
    # every tested figure carries an interval of the difference that contains 0
    tested = [ch for ch in changes if ch.result is not None and ch.result.interval is not None]
    assert len(tested) > 20
    for ch in tested:
        lo, hi = ch.result.interval
        assert lo <= 0 <= hi, ch.figure.label


def test_a_worse_run_is_caught_figure_by_figure_in_the_right_direction(db):
    url, base, _, _, worse = db
    a, d = runs(url, base, worse)
    changes = compare_runs(a, d)
    bad = {ch.figure.family for ch in changes if ch.call == WORSE}
    assert {"avg_latency", "p99_latency", "max_latency", "misses", "micro_avg", "micro_p99", "micro_max",
            "tire_max_masses"} <= bad
    # the interval of a 60 % slower average contains the true change and excludes 0
    sw = next(ch for ch in changes if ch.figure.key == "micro:switch [threads=2] (idle):avg")
    true = 0.6 * sw.base
    lo, hi = sw.result.interval
    assert lo <= true <= hi and lo > 0
    # the other way round it is better, not worse
    back = compare_runs(d, a)
    assert not [ch for ch in back if ch.call == WORSE and ch.figure.family not in ("verdict", "failed_verdicts")]
    assert {"avg_latency", "max_latency", "micro_avg"} <= {ch.figure.family for ch in back if ch.call == BETTER}


def test_fail_on_trips_with_exit_status_3(db, tmp_path):
    url, base, same, noisy, worse = db
    p = rtgauge("compare", str(base), str(worse), "--db", url, "--fail-on", "max_latency>+20%",
                "-o", str(tmp_path / "cmp.html"), "--junit", str(tmp_path / "cmp.xml"))
    assert p.returncode == 3, p.stdout + p.stderr
    from test_run_gates import junit      # a real XML parser and the common JUnit schema
    cases = list(junit(tmp_path / "cmp.xml").iter("testcase"))
    assert cases and all(c.get("name") == "max_latency>+20%" for c in cases)
    broken = [c for c in cases if c.find("failure") is not None]
    assert any("latency@idle max latency" in c.get("classname") for c in broken)
    assert "--fail-on tripped" in p.stdout and "latency@idle max latency" in p.stdout
    html = (tmp_path / "cmp.html").read_text()
    assert "<section id='regressions'" in html and "max_latency&gt;+20%" in html
    # other draws of the same noise move figures by a per cent or two: a +1 % rule cannot be
    # decided by these rounds (exit 4, and what would decide), a +10 % rule passes
    p = rtgauge("compare", str(base), str(noisy), "--db", url, "--fail-on", "max_latency>+1%",
                "--fail-on", "micro_avg>+1%", "--fail-on", "misses>0")
    assert p.returncode == 4, p.stdout + p.stderr
    assert "--fail-on undecided" in p.stdout and "--rounds" in p.stdout and "tripped" not in p.stdout
    p = rtgauge("compare", str(base), str(noisy), "--db", url, "--fail-on", "max_latency>+10%",
                "--fail-on", "micro_avg>+10%", "--fail-on", "misses>0")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no rule tripped" in p.stdout


@pytest.mark.parametrize("rule, trips", [
    ("max_latency>+70%", False), ("max_latency>+50%", True), ("avg_latency>+2us", True),
    ("micro_avg>+40%", True), ("micro_avg>+80%", False), ("micro_p99>+40%", True),
    ("misses>0", True), ("misses>200", False), ("tire_max_masses<-50%", True), ("wall_time>+100%", False),
])
def test_fail_on_thresholds(db, rule, trips):
    url, base, _, _, worse = db
    a, d = runs(url, base, worse)
    r = parse_rule(rule)
    assert any(r.trips(c) for c in compare_runs(a, d)) is trips


def test_a_change_rule_ignores_a_change_that_is_not_significant(db):
    url, base, _, noisy, _ = db
    a, c = runs(url, base, noisy)
    changes = compare_runs(a, c)
    # the noisy run moves figures by a per cent or two: beyond +0.5 %, but within the noise
    moved = [ch for ch in changes if ch.figure.family == "micro_avg" and (ch.relative or 0) > 0.005]
    assert moved and all(ch.call == SAME for ch in moved)
    assert not any(parse_rule("micro_avg>+0.5%").trips(ch) for ch in changes)


def test_compare_json_gives_every_figure_with_verdict_size_and_interval(db):
    url, base, _, _, worse = db
    p = rtgauge("compare", str(base), str(worse), "--db", url, "--json", "--fail-on", "micro_avg>+10%")
    assert p.returncode == 3, p.stderr
    doc = json.loads(p.stdout)
    assert doc["alpha"] == 0.05 and doc["correction"] == "benjamini-hochberg" and doc["gate"] == "fail"
    figs = doc["comparisons"][0]["figures"]
    assert len(figs) == len(compare_runs(*runs(url, base, worse)))
    for f in figs:
        assert f["verdict"] in (WORSE, BETTER, SAME, "new", GONE, INVALID)
        assert {"key", "label", "unit", "difference", "interval", "relative", "p_value", "q_value", "method"} <= set(f)
    sw = next(f for f in figs if f["key"] == "micro:switch [threads=2] (idle):avg")
    assert sw["verdict"] == WORSE and sw["interval"][0] > 0 and len(sw["candidate"]["rounds"]) == 4
    assert 0.4 < sw["relative"] < 0.8 and sw["relative_interval"][0] > 0 and sw["q_value"] < 0.05
    assert any("micro_avg>+10%" in t for t in doc["tripped"])


def failed_latency_run(url: str, nan: bool = False) -> int:
    """The baseline's latency jobs, one of them failed (or with a NaN max)."""
    with open_store(url) as store:
        run_id = store.begin_run(SYSTEM, DOCTOR, "standard", "builtin:standard", ["rtgauge", "run"])
        for j, d in full_run_documents():
            if j["name"] == "latency@idle":
                if nan:
                    d = latency_document()
                    d["metrics"]["ti"]["max"] = math.nan
                else:
                    d = {"schema": 1, "test": "latency", "ok": False, "interrupted": False,
                         "error": "fifo refused", "params": {}, "env": {}, "metrics": {}, "verdicts": {}}
            store.add_measurement(run_id, j, d)
        store.finish_run(run_id, "complete", "")
        return run_id


@pytest.mark.parametrize("nan", [False, True])
def test_the_gate_fails_closed(tmp_path, nan):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    base = store_rounds(url, [1.0])
    cand = failed_latency_run(url, nan=nan)
    p = rtgauge("compare", str(base), str(cand), "--db", url, "--fail-on", "max_latency>+20%")
    assert p.returncode == 3, p.stdout + p.stderr
    text = " ".join(p.stdout.split())
    assert "fails closed" in text or "failed closed" in text
    assert "latency@idle max latency" in text and "Traceback" not in p.stderr
    if not nan:
        assert "fifo refused" in text
    if nan:
        return
    # a gate on a family nothing measured fails closed too
    p = rtgauge("compare", str(base), str(cand), "--db", url, "--fail-on", "timestamp_cost>+5%", "--json")
    assert p.returncode == 3 and json.loads(p.stdout)["gate"] == "fail"
    assert "timestamp_cost" in json.loads(p.stdout)["failed_closed"][0]


@pytest.mark.parametrize("rule", ["max_latency", "latency>+5%", "max_latency>20%", "max_latency=+5%"])
def test_bad_rules_are_refused(rule):
    with pytest.raises(UserError):
        parse_rule(rule)


def test_compare_cli_errors(db):
    url, base, *_ = db
    p = rtgauge("compare", str(base), "--db", url)
    assert p.returncode == 2 and "two or more" in p.stderr
    p = rtgauge("compare", str(base), "99", "--db", url)
    assert p.returncode == 2 and "no run 99" in p.stderr
    p = rtgauge("compare", str(base), "2", "--db", url, "--fail-on", "bogus>1")
    assert p.returncode == 2 and "is not a rule" in p.stderr and "Traceback" not in p.stderr
    p = rtgauge("compare", str(base), "2", "--db", url, "--alpha", "2")
    assert p.returncode == 2 and "--alpha" in p.stderr and "Traceback" not in p.stderr
