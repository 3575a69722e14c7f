"""`rtgauge compare --pwcet`: the probable worst cases of two runs side by side, with
their intervals, and "B's worst case is worse than A's" as a tested statement. The
runs carry block maxima drawn from Gumbel distributions whose tails are known: B's
scale is three times A's, so B's level at 1e-9 is far above A's."""

from __future__ import annotations

from conftest import cli
import json
import subprocess
import sys

import numpy as np
import pytest

from rtgauge.store import open_store
from test_report_builders import DOCTOR, SYSTEM, latency_document

BLOCKS = 200


def gumbel_maxima(seed: int, loc_ns: float, scale_ns: float) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.gumbel(loc_ns, scale_ns, BLOCKS)]


def store_run(url: str, seed: int, scale_ns: float) -> int:
    doc = latency_document(cpus=1, seed=seed)
    maxima = gumbel_maxima(seed, 50_000, scale_ns)
    series = {"unit": "ns", "window_ns": 1_000_000_000, "start_ns": 1, "max": maxima}
    doc["metrics"]["ti_window_max"] = series
    doc["metrics"]["ti_window_max#0"] = dict(series)
    doc["metrics"]["cycles"] = {"unit": "count", "value": 1000 * BLOCKS}
    doc["metrics"]["ti"]["max"] = max(maxima)
    doc["params"]["duration_s"] = BLOCKS
    job = {"name": "latency", "test": "latency", "condition": "idle", "tool": "engine", "load": {"condition": "idle"}}
    with open_store(url) as store:
        run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(run_id, job, doc)
        store.finish_run(run_id, "complete", "")
    return run_id


def compare(*args) -> subprocess.CompletedProcess:
    return cli(["compare", *args], timeout=300)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('cmp-pwcet') / 'r.db'}"
    return url, store_run(url, 1, 5_000), store_run(url, 2, 5_000), store_run(url, 3, 15_000)


def worst_cases(db, a, b) -> list[dict]:
    url = db[0]
    p = compare(str(a), str(b), "--db", url, "--pwcet", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["comparisons"][0]["pwcet"]


def test_a_heavier_tail_is_a_significantly_worse_probable_worst_case(db):
    _, a, _, heavy = db
    [row] = worst_cases(db, a, heavy)
    assert row["name"] == "latency" and row["verdict"] == "worse", row
    assert row["b"]["level_ns"] > row["a"]["level_ns"]
    assert row["ci_low_ns"] > 0
    for side in (row["a"], row["b"]):
        assert side["ci_low_ns"] <= side["level_ns"] <= side["ci_high_ns"]


def test_two_draws_of_one_tail_are_not_called_different(db):
    _, a, same, _ = db
    [row] = worst_cases(db, a, same)
    assert row["verdict"] == "no significant difference", row
    assert row["ci_low_ns"] < 0 < row["ci_high_ns"]


def test_the_terminal_shows_both_levels_with_intervals(db):
    url, a, _, heavy = db
    p = compare(str(a), str(heavy), "--db", url, "--pwcet")
    assert p.returncode == 0, p.stderr
    assert "Probable worst case" in p.stdout and "worse" in p.stdout


def test_exceedance_needs_pwcet_and_a_probability(db):
    url, a, same, _ = db
    p = compare(str(a), str(same), "--db", url, "--exceedance", "1e-9")
    assert p.returncode == 2 and "--exceedance goes with --pwcet" in p.stderr and "Traceback" not in p.stderr
    p = compare(str(a), str(same), "--db", url, "--pwcet", "--exceedance", "2")
    assert p.returncode == 2 and "is not a probability" in p.stderr
