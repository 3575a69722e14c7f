"""The engine's window counts (docs/engine.md, latency's metrics): per window of the
`ti_window_max` series, for all threads together, the wake-ups (`window_cycles`), the
sum of their Ti (`ti_window_sum`), the misses (`window_misses`) and the skipped
deadlines (`window_skipped`), so that a run `rtgauge run` stores holds what a
single-round comparison cuts into batches for the noise of its average and missed
deadlines (analysis/compare/windows.py window_figures, noise.batch_means and
batch_rates; docs/compare.md "Single runs").

Real engine runs at SCHED_OTHER (no real-time work, so they disturb no measurement of
the machine and run in the background pass):

- the counts add up to the run's cycles, misses and skipped deadlines, their sum over
  the cycles is the distribution's average to its rounding (and the histogram's mean
  to its bucket width), and they equal the status stream's windows (the other path
  the engine has, folded by windows.fold_status), a whole-process stop of 0.35 s
  included: the windows it covered hold no wake-up and every deadline of both threads
  skipped;
- two runs stored by `rtgauge run` and compared (A/A) hold the series, and the average
  and the missed deadlines are judged on each run's own batches (the method says so)
  instead of the drift model; the average reads no significant difference. The two run
  at the same time, so that they are A/A on a machine the suite's other passes load: one
  after the other, at nice 19 beside `stress-ng --cpu 2`, they averaged 539 and 89 µs
  (called "better"), as the load of the passes beside them changed between the two."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import ROOT, rtgauge, rtgauge_popen
from readiness import status_cycles, wait_for
from rtgauge.analysis.compare import windows
from rtgauge.analysis.compare.regress import SAME, compare_runs
from rtgauge.records import Measurement
from rtgauge.store import open_store

QUIET = ("--policy", "other", "--no-mlock")
COUNTS = ("window_cycles", "ti_window_sum", "window_misses", "window_skipped")
AVG, MISSES = "lat:latency@idle:avg", "lat:latency@idle:misses"


def check_counts_add_up(metrics: dict) -> None:
    series = {k: metrics[k] for k in (*COUNTS, "ti_window_max")}
    for k in COUNTS:
        s = series[k]
        assert s["window_ns"] == series["ti_window_max"]["window_ns"], k
        assert s["start_ns"] == series["ti_window_max"]["start_ns"], k
        assert all(isinstance(v, int) and v >= 0 for v in s["max"]), k
    assert len({len(series[k]["max"]) for k in COUNTS}) == 1
    assert len(series["window_cycles"]["max"]) >= len(series["ti_window_max"]["max"])
    cycles = sum(series["window_cycles"]["max"])
    assert cycles == metrics["cycles"]["value"] > 0
    assert sum(series["window_misses"]["max"]) == metrics["misses"]["value"]
    assert sum(series["window_skipped"]["max"]) == metrics["skipped"]["value"]
    mean = sum(series["ti_window_sum"]["max"]) / cycles
    assert abs(mean - metrics["ti"]["avg"]) <= 1e-3 + 1e-9 * mean     # the document rounds avg to 1 ps
    bins = metrics["ti"]["histogram"]["bins"]
    binned = sum((lo + hi) / 2 * n for lo, hi, n in bins) / sum(n for _, _, n in bins)
    assert binned == pytest.approx(mean, rel=0.01)                     # ≤ 0.8 % bucket width
    for n, peak in zip(series["window_cycles"]["max"], series["ti_window_max"]["max"]):
        assert (n == 0) == (peak is None)                              # the same windows


def test_the_counts_add_up_and_equal_the_status_windows_across_a_stop(engine_bin, tmp_path):
    status, out = tmp_path / "status.jsonl", tmp_path / "doc.json"
    p = subprocess.Popen([engine_bin, "latency", *QUIET, "--threads", "2", "--interval-us", "1000",
                          "--duration-s", "3", "--window-s", "0.1", "--status", str(status), "--out", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: status_cycles(status) >= 300, "300 wake-ups in the engine's status", proc=p)
        p.send_signal(signal.SIGSTOP)
        time.sleep(0.35)                  # the stop's length is the subject: 3 windows and more
        p.send_signal(signal.SIGCONT)
        assert p.wait(timeout=60) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    m = json.loads(out.read_text())["metrics"]
    check_counts_add_up(m)
    assert not any(k.startswith(c + "#") for k in m for c in COUNTS)   # all threads together only
    cycles, skipped = m["window_cycles"]["max"], m["window_skipped"]["max"]
    # a window the stop covered whole: no wake-up, both threads' 100 deadlines skipped
    assert any(c == 0 and s == 200 for c, s in zip(cycles, skipped)), list(zip(cycles, skipped))
    with open(status) as f:
        folded = windows.fold_status(f)
    n = len(cycles)
    for name in ("window_cycles", "window_misses", "window_skipped"):
        assert folded[name]["max"][:n] == m[name]["max"], name
        assert not any(folded[name]["max"][n:]), name
    for total, avg, c in zip(m["ti_window_sum"]["max"], folded[windows.AVG]["max"], cycles):
        assert (avg is None) == (c == 0)
        if c:
            assert abs(total / c - avg) <= 0.05 + 1e-12 * total              # the status rounds to 0.1 ns
    fig = windows.window_figures(Measurement.from_dict({"name": "latency@idle", "test": "latency", "metrics": m}))
    assert fig["source"] == windows.SUM and fig["cycles"] == [float(c) for c in cycles]
    assert fig["periods"] == [float(c + s) for c, s in zip(cycles, skipped)]


PROFILE = """
name = "aa-windows"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
interval-us = 1000
duration-s = 6
window-s = 0.1
policy = "other"
no-mlock = true
"""


def test_stored_runs_compared_a_a_judge_the_average_and_misses_on_their_own_batches(tmp_path):
    profile, db = tmp_path / "aa.toml", tmp_path / "r.db"
    profile.write_text(PROFILE)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = [rtgauge_popen("run", "--profile", str(profile), "--db", str(tmp_path / f"{ab}.db"), "--no-report",
                          env_full=env, cwd=tmp_path) for ab in "ab"]
    for p in runs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    for ab in "ab":          # one database, runs 1 and 2
        p = rtgauge("import", str(tmp_path / f"{ab}.db"), "--db", str(db))
        assert p.returncode == 0, p.stderr
    with open_store(f"sqlite:///{db}") as store:
        a, b = store.get_run(1), store.get_run(2)
        for run in (a, b):
            m, = [m for m in run.measurements if m.test == "latency"]
            check_counts_add_up({k: v.to_dict() for k, v in m.metrics.items()})
            assert windows.window_figures(m)["source"] == windows.SUM
        got = {c.figure.key: c for c in compare_runs(a, b)}
    for key, source in ((AVG, "per-window averages"), (MISSES, "per-window late periods")):
        r = got[key].result
        assert "own between-batch spread" in r.method and source in r.method, (key, r.method)
        assert r.extra["batches"] == [10, 10] and "drift" not in r.method, (key, r.method)
    assert got[AVG].call == SAME, (got[AVG].base, got[AVG].value, got[AVG].result.method)
    p = rtgauge("compare", "1", "2", "--db", str(db), "--json")
    assert p.returncode == 0, p.stderr
    fig = next(f for f in json.loads(p.stdout)["comparisons"][0]["figures"] if f["key"] == AVG)
    assert fig["call"] == "no significant difference" and "per-window averages" in fig["method"], fig
