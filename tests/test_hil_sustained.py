"""Sustained rate of the hil loop (rtgauge.hil.sustained): the search itself against
a known threshold, and a real sweep whose answer must respect the ground truth that
a step of W us cannot be sustained at a period shorter than W."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli, needs_root
from rtgauge.errors import UserError
from rtgauge.hil.sustained import (SustainedSpec, run_sustained, shortest_holding, spec_from_table,
                                   sustained_and_store, sustained_document)
from rtgauge.store import open_store

pytestmark = pytest.mark.alone


@pytest.mark.parametrize("threshold, start", [(137, 1000), (137, 50), (5000, 1000), (20, 1000)])
def test_search_finds_threshold_within_precision(threshold, start):
    best, probes = shortest_holding(lambda p: p >= threshold, start, 20, 100_000, 0.05)
    assert best is not None and threshold <= best <= threshold * 1.05 + 1
    # it never reports a period that failed, and probed it
    assert (best, True) in probes and all(ok == (p >= threshold) for p, ok in probes)
    assert len(probes) < 25


def test_search_none_when_even_the_longest_fails():
    best, probes = shortest_holding(lambda p: False, 1000, 20, 8000, 0.05)
    assert best is None and probes[-1] == (8000, False)


@pytest.mark.parametrize("table, words", [
    ({"payload": "magic"}, "payload must be"),
    ({"payload": "tire", "sizes": [10]}, "multiples of 4"),
    ({"frames": 0}, "frames must be"),
    ({"start_us": 10}, "periods must satisfy"),
    ({"speed": 3}, "unknown key 'speed'"),
])
def test_bad_spec_rejected(table, words):
    with pytest.raises(UserError, match=words):
        spec_from_table(table, "profile x")


@needs_root
def test_real_sweep_respects_the_step_time(engine_bin):
    # retries: a probe that fails is tried again before it counts as failed (the sweep's
    # own answer to this VM's host stalls, up to ~15 ms a few times a minute). 200 frames
    # a probe: a period below the step fails on every frame, whatever their number.
    spec = SustainedSpec(payload="work", sizes=[1500], frames=200, start_us=2000, max_us=20000,
                         precision=0.15, retries=3)
    result = run_sustained(engine_bin, spec)
    rows = {r["size"]: r for r in result["results"]}
    for work_us, r in rows.items():
        shortest = r["shortest_period_us"]
        assert shortest is not None
        # the loop cannot turn around faster than its own step
        assert shortest >= work_us
        # and the period just below the answer was really probed and failed, unless it hit the floor
        failed = [p["period_us"] for p in r["probes"] if not p["holds"]]
        assert failed and max(f for f in failed if f < shortest) >= shortest / 1.15 - 1
        assert r["at_shortest"]["ts"]["p50"] >= work_us * 1000 * 0.95
    doc = sustained_document(result)
    assert doc["test"] == "hil-sustained"
    assert doc["metrics"]["shortest_period#payload=work,size=1500"]["value"] == rows[1500]["shortest_period_us"]



@needs_root
def test_sweep_stored_as_one_measurement(engine_bin, tmp_path):
    spec = SustainedSpec(payload="none", sizes=[0], frames=150, start_us=2000, min_us=1000, max_us=8000,
                         precision=0.5, retries=1)
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        run_id = store.begin_run({"hostname": "h"}, [], "hil", "", [])
        said: list[str] = []
        doc = sustained_and_store(store, run_id, spec, said.append, engine=engine_bin)
        (m,) = store.get_run(run_id).to_dict()["measurements"]
    finally:
        store.close()
    assert m["test"] == "hil-sustained" and m["name"] == "hil-sustained"
    assert any("hil none 0:" in line for line in said)
    assert any(line.endswith("holds") or "holds (attempt" in line or line.endswith("fails") for line in said)
    (row,) = doc["sustained"]
    assert row["probes"][0]["period_us"] == 2000
    if row["shortest_period_us"]:
        assert 1000 <= row["shortest_period_us"] <= 8000
        assert doc["verdicts"]["sustained#payload=none,size=0"]["pass"] is True


@needs_root
def test_profile_hil_sustained_table_runs_after_the_jobs(engine_bin, tmp_path):
    """A profile's [hil_sustained] table makes `rtgauge run` store the sweep as one
    more measurement of the run, after the plan's jobs."""
    root = Path(__file__).resolve().parent.parent
    prof = tmp_path / "p.toml"
    prof.write_text("""
name = "hil-rate"
[[jobs]]
name = "hil"
test = "hil"
conditions = ["idle"]
[jobs.options]
frames = 100
period-us = 2000
[hil_sustained]
payload = "none"
sizes = [0]
frames = 150
start_us = 2000
min_us = 1000
max_us = 8000
precision = 0.5
""")
    db = tmp_path / "r.db"
    p = cli(["run", "--profile", str(prof), "--db", str(db),
                        "--no-report"], timeout=300,
                       env={**os.environ, "PYTHONPATH": str(root), "RTGAUGE_ENGINE": engine_bin})
    assert p.returncode in (0, 1), p.stderr
    store = open_store(f"sqlite:///{db}")
    try:
        run = store.get_run(store.latest_run_id()).to_dict()
    finally:
        store.close()
    names = [m["name"] for m in run["measurements"]]
    assert names == ["hil@idle", "hil-sustained"]
    sweep = run["measurements"][1]
    assert sweep["test"] == "hil-sustained" and sweep["ok"]
