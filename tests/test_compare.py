"""`rtgauge compare`: side by side, the regression view and --fail-on for CI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rtgauge.analysis.regress import compare_runs, parse_rule
from rtgauge.errors import UserError
from rtgauge.store import open_store
from test_report_builders import full_run_documents, store_run


def rtgauge(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    base = store_run(url, full_run_documents())
    same = store_run(url, full_run_documents())                          # identical figures
    noisy = store_run(url, full_run_documents(scale=1.03))               # 3 %: within every threshold
    worse = store_run(url, full_run_documents(scale=1.6, misses=3, tire_cost=320, pi_spin_pass=False))
    return url, base, same, noisy, worse


def runs(url, *ids):
    with open_store(url) as s:
        return [s.get_run(i) for i in ids]


def test_identical_and_noisy_runs_show_no_regression(db):
    url, base, same, noisy, _ = db
    a, b, c = runs(url, base, same, noisy)
    assert [ch for ch in compare_runs(a, b) if ch.verdict != "same"] == []
    assert [ch.figure.label for ch in compare_runs(a, c) if ch.verdict == "worse"] == []


def test_a_worse_run_is_caught_figure_by_figure(db):
    url, base, _, _, worse = db
    a, d = runs(url, base, worse)
    bad = {ch.figure.family for ch in compare_runs(a, d) if ch.verdict == "worse"}
    assert {"avg_latency", "p99_latency", "max_latency", "misses", "micro_avg", "micro_max",
            "tire_max_masses", "wall_time"} <= bad
    # and the other way round it is better, not worse
    assert not [ch for ch in compare_runs(d, a) if ch.verdict == "worse" and ch.figure.family != "verdict"]


def test_fail_on_trips_with_exit_status_3(db, tmp_path):
    url, base, same, _, worse = db
    p = rtgauge("compare", str(base), str(worse), "--db", url, "--fail-on", "max_latency>+20%",
                "-o", str(tmp_path / "cmp.html"))
    assert p.returncode == 3, p.stderr
    assert "--fail-on tripped" in p.stdout and "latency@idle max latency" in p.stdout
    html = (tmp_path / "cmp.html").read_text()
    assert "<section id='regressions'" in html and "max_latency&gt;+20%" in html
    p = rtgauge("compare", str(base), str(same), "--db", url, "--fail-on", "max_latency>+20%", "--fail-on", "misses>0")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no rule tripped" in p.stdout


@pytest.mark.parametrize("rule, trips", [
    ("max_latency>+70%", False), ("max_latency>+50%", True), ("avg_latency>+2us", True),
    ("misses>0", True), ("misses>5", False), ("tire_max_masses<-50%", True), ("wall_time>+100%", False),
])
def test_fail_on_thresholds(db, rule, trips):
    url, base, _, _, worse = db
    a, d = runs(url, base, worse)
    r = parse_rule(rule)
    assert any(r.trips(c) for c in compare_runs(a, d)) is trips


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
