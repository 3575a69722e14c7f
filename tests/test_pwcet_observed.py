"""`pwcet` and `show` agree on the observed maximum (issue 31): the block maxima the
fit uses leave out a window that is not full, and a run stopped at its first spike
(`run --trace-threshold-us`) ends in one, so the largest block maximum (713.3 µs) is
not what the run saw (3,400.3 µs). And "run needed" is a floor, never a promise. On a
real recorded document (tests/data/pwcet/README.md), through real SQLite and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli
from rtgauge.analysis import pwcet as pw
from rtgauge.store import open_store
from test_report_builders import job, store_run

DATA = Path(__file__).resolve().parent / "data" / "pwcet"
SPIKE_NS = 3_400_308


@pytest.fixture
def stored(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    doc = json.loads((DATA / "break-at-spike.json").read_text())
    run_id = store_run(url, [(job("latency@idle", "latency", "idle"), doc)])
    with open_store(url) as s:
        return url, run_id, s.get_run(run_id).measurements[0]


def test_the_recorded_run_stopped_inside_a_window(stored):
    """The document is the case: its spike is in the window the fit leaves out."""
    _, _, m = stored
    maxima, block, _ = pw.measurement_series(m)
    assert m.metric("ti").max == SPIKE_NS
    assert max(maxima) < SPIKE_NS / 4            # what the old observed max said


def test_pwcet_and_show_print_the_measurement_maximum(stored):
    url, run_id, _ = stored
    p = cli(["pwcet", str(run_id), "--db", url, "--json"])
    assert p.returncode == 0, p.stderr
    results = json.loads(p.stdout)["measurements"][0]["results"]
    assert results and all(r["observed_max_ns"] == SPIKE_NS for r in results)
    s = cli(["show", str(run_id), "--db", url, "--json"])
    shown = json.loads(s.stdout)["measurements"][0]
    assert shown["metrics"]["ti"]["max"] == SPIKE_NS
    assert shown["pwcet"][0]["observed_max_ns"] == SPIKE_NS
    text = cli(["pwcet", str(run_id), "--db", url]).stdout
    assert "3,400.3" in text and "713.3" not in text


def test_the_block_maxima_alone_miss_the_spike(stored):
    """The broken method: the analysis of the block maxima alone (what pwcet printed)
    says 713.3 µs, so the test above can fail."""
    _, _, m = stored
    maxima, block, interval = pw.measurement_series(m)
    assert pw.analyse(maxima, block, 1e-9, interval).observed_max_ns < SPIKE_NS / 4


def test_an_estimate_below_the_spike_that_ended_the_run_is_refused(stored):
    """At p=1e-4 the fit of the full windows puts the level's whole 95 % interval below
    3,400.3 µs, the wake-up that ended the run: refused, not printed as a bound."""
    _, _, m = stored
    maxima, block, interval = pw.measurement_series(m)
    blind = pw.analyse(maxima, block, 1e-4, interval)
    assert blind.applicable and blind.ci_high_ns < SPIKE_NS        # what it would have said
    r = pw.measurement_pwcet(m, 1e-4)[0]
    assert not r.applicable and r.code == "failed-validation" and "3,400.3" in r.reason
    assert r.level_ns is None and r.ci_high_ns is None


def test_run_needed_is_a_floor(stored):
    """At p=1e-9 the 4,890 cycles are beyond the evidence; the run needed is the distance
    rule's 10^5 cycles, printed as "at least", never as a length that suffices."""
    _, _, m = stored
    r = pw.measurement_pwcet(m, 1e-9)[0]
    assert not r.applicable and r.run_needed_s == pytest.approx(100.0)
    assert r.needed_label() == "at least 1.67 minutes"
    assert "a run of at least 1.67 minutes is needed" in r.summary()
