"""A default comparison (one round a side) of the average and the missed deadlines on
real runs of this VM that hold their per-window averages and late periods
(tests/data/compare-windows/README.md: four plain 8 s latency runs and two beside a
spinner, recorded at SCHED_OTHER, nice 19, while other work ran): the noise between
runs comes from each run's own batches (noise.batch_means, noise.batch_rates,
regress.single_round_batches and single_round_rates), as a latency p99's does
(tests/test_compare_batches.py), and every figure goes through one adjustment and one
answer.

- A/A: the 6 pairs of plain runs read "no change", the average and the misses among
  them, although the plain runs' averages differ by up to 22 %;
- A/B: the steady spinner run (spinner-2: every batch 187-224 µs) against the plain run
  before it is called worse at the average and `--fail-on 'avg_latency>+20%'` trips;
  the other spinner run, whose disturbance came and went (its batches 104-576 µs), is
  not called either way: its own batches show that one run of it says little;
- the broken method kept: the drift model (noise.DRIFT, a machine's fitted constant,
  what the average and the misses used before) leaves the steady spinner's average
  undecided;
- a run without the per-window series falls back to the drift model and says so."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from conftest import rtgauge
from rtgauge.analysis.compare import noise, regress, windows
from rtgauge.analysis.compare.regress import BETTER, SAME, WORSE, compare_runs
from rtgauge.store import open_store

DATA = Path(__file__).parent / "data"
HERE = DATA / "compare-windows"
ORDER = ("plain-1", "plain-2", "spinner-1", "plain-3", "plain-4", "spinner-2")   # as recorded
PLAIN = ("plain-1", "plain-2", "plain-3", "plain-4")
STEADY = ("plain-4", "spinner-2")       # the spinner in every batch
UNSTEADY = ("plain-2", "spinner-1")     # the spinner's effect came and went
AVG, MISSES = "lat:latency@idle:avg", "lat:latency@idle:misses"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The six recorded runs, then tests/data/compare/plain-1 (the window maxima only),
    imported into a real SQLite database: name -> run id."""
    db = tmp_path_factory.mktemp("compare-windows") / "runs.db"
    ids = {}
    for i, (name, where) in enumerate([*((n, HERE / n) for n in ORDER),
                                       ("maxima-only", DATA / "compare" / "plain-1")], 1):
        p = rtgauge("import", str(where), "--db", str(db))
        assert p.returncode == 0, p.stderr
        ids[name] = i
    return db, ids


def changes(db, a: int, b: int):
    with open_store(f"sqlite:///{db}") as store:
        return {c.figure.key: c for c in compare_runs(store.get_run(a), store.get_run(b))}


def test_the_stored_series_are_the_fold_of_the_engines_status_and_add_up_to_the_run():
    for name in ORDER:
        doc = json.loads((HERE / name / "latency@idle.json").read_text())
        m = doc["metrics"]
        with open(HERE / "status" / f"{name}.jsonl") as f:
            folded = windows.fold_status(f)
        for series in windows.SERIES:
            assert folded[series] == m[series], (name, series)
        assert len(m[windows.CYCLES]["max"]) == len(m["ti_window_max"]["max"]) == 80
        assert sum(m[windows.CYCLES]["max"]) == m["cycles"]["value"]
        assert sum(m[windows.MISSES]["max"]) == m["misses"]["value"]
        assert sum(m[windows.SKIPPED]["max"]) == m["skipped"]["value"]
        avg = sum(a * c for a, c in zip(m[windows.AVG]["max"], m[windows.CYCLES]["max"]) if c) / m["cycles"]["value"]
        assert avg == pytest.approx(m["ti"]["avg"], rel=1e-4)      # the status rounds a window's avg to 0.1 ns


def test_a_a_pairs_read_no_change_with_the_average_and_misses_on_their_own_batches(runs):
    db, ids = runs
    avgs = []
    for a, b in itertools.combinations(PLAIN, 2):
        got = changes(db, ids[a], ids[b])
        assert [k for k, c in got.items() if c.call != SAME] == [], (a, b)
        for key, source in ((AVG, "per-window averages"), (MISSES, "per-window late periods")):
            r = got[key].result
            assert "own between-batch spread" in r.method and source in r.method, (a, b, key)
            assert r.extra["batches"] == [10, 10] and "drift of" not in r.method
        avgs += [got[AVG].base, got[AVG].value]
    assert max(avgs) / min(avgs) > 1.2                     # what the VM did between runs
    p = rtgauge("compare", str(ids["plain-1"]), str(ids["plain-4"]), "--db", str(db))
    assert p.returncode == 0 and "no change" in p.stdout.splitlines()[0], p.stdout


def test_the_steady_spinner_is_called_worse_at_the_average_and_the_gate_trips(runs):
    db, ids = runs
    a, b = STEADY
    p = rtgauge("compare", str(ids[a]), str(ids[b]), "--db", str(db), "--json", "--fail-on", "avg_latency>+20%")
    assert p.returncode == 3, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    fig = next(f for f in doc["comparisons"][0]["figures"] if f["key"] == AVG)
    assert fig["call"] == "worse" and fig["q_value"] < 0.05 and fig["relative"] > 0.5
    assert "per-window averages" in fig["method"] and fig["detail"]["batch_spread"][1] < 0.1
    assert doc["gate"] == "fail"
    p = rtgauge("compare", str(ids[a]), str(ids[b]), "--db", str(db))
    assert "worse" in p.stdout.splitlines()[0], p.stdout


def test_a_spinner_that_came_and_went_is_not_called_either_way(runs):
    db, ids = runs
    got = changes(db, *(ids[n] for n in UNSTEADY))
    r = got[AVG].result
    assert got[AVG].call == SAME and r.extra["batch_spread"][1] > 0.3     # its batches: 104 to 576 µs
    assert not [k for k, c in got.items() if c.call == BETTER]


def test_the_drift_model_leaves_the_steady_spinner_undecided(runs, monkeypatch):
    """The broken method kept: the machine's fitted drift instead of the runs' own
    batches (what the average and the misses used before)."""
    db, ids = runs
    monkeypatch.setattr(windows, "window_figures", lambda m: None)
    got = changes(db, *(ids[n] for n in STEADY))
    assert "drift of 37%" in got[AVG].result.method
    assert got[AVG].call == SAME and got[AVG].relative > 0.5


def test_a_run_without_per_window_series_falls_back_and_says_so(runs):
    db, ids = runs
    got = changes(db, ids["maxima-only"], ids["plain-1"])
    for key, what in ((AVG, "averages"), (MISSES, "late periods")):
        r = got[key].result
        assert r.method.startswith(f"fallback to the drift model (the baseline holds no per-window {what})"), key
        assert "drift of" in r.method and r.extra["no_batches"] and "drift model" in got[key].why
    assert "own between-batch spread" in got["lat:latency@idle:p99"].result.method   # its maxima still batch


def test_batches_of_means_and_rates():
    b = noise.batch_means([10.0, 30.0] * 10, [3, 1] * 10)
    assert b.count == 10 and b.values == [15.0] * 10 and b.source == "its per-window averages"
    assert noise.batch_means([10.0] * 20, [0] * 20) is None          # no wake-ups: no batches
    r = noise.batch_rates([0] * 20, [100] * 20)
    assert r.count == 10 and r.values == [0.5 / 200] * 10 and math.isfinite(r.spread)
    assert noise.batch_rates([1] * 9, [100] * 9) is None              # 4 batches of 2: fewer than 5
    assert regress.BATCHED == {"p99_latency": "p99", "max_latency": "max"}
