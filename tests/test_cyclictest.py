"""cyclictest's output translated into the contract: exact against its own figures."""

import os
import shutil

import pytest

from rtgauge.tools import cyclictest
from conftest import needs_root


def test_percentiles_from_buckets_and_overflow_bound():
    counts = {1: 50, 2: 40, 10: 9}          # µs buckets; 1 more value overflows
    d = cyclictest.distribution(counts, cycles=100, overflow=1, vmin=1, vavg=2.5, vmax=500,
                                limit_us=100)
    assert d["count"] == 100 and d["min"] == 1000 and d["max"] == 500_000
    assert d["p50"] == 1000                 # 50th value is in bucket 1
    assert d["p90"] == 2000                 # 90th value is in bucket 2
    assert d["p99"] == 10_000
    assert d["p9999"] == 500_000 and "p9999" in d["upper_bounds"]   # among the overflows
    assert sum(b[2] for b in d["histogram"]["bins"]) == 99
    assert d["histogram"]["overflow"] == 1


@needs_root
@pytest.mark.skipif(shutil.which("cyclictest") is None, reason="cyclictest (rt-tests) not installed")
def test_real_cyclictest_run_translates_exactly(tmp_path):
    import subprocess

    cpus = sorted(os.sched_getaffinity(0))
    opts = {"interval-us": 1000, "duration-s": 1, "priority": 80, "histogram": 5000}
    path = str(tmp_path / "ct.json")
    p = subprocess.run(cyclictest.command(opts, cpus, path), capture_output=True, timeout=60)
    raw = cyclictest.load_json(path)
    doc = cyclictest.to_document(raw, opts, cpus, p.returncode, False)
    assert doc["ok"] and doc["tool"] == "cyclictest"
    total = sum(t["cycles"] for t in raw["thread"].values())
    assert doc["metrics"]["cycles"]["value"] == total > 500 * len(cpus)
    assert doc["metrics"]["ti"]["max"] == max(t["max"] for t in raw["thread"].values()) * 1000
    assert doc["metrics"]["ti"]["min"] == min(t["min"] for t in raw["thread"].values()) * 1000
    for key, t in raw["thread"].items():
        m = doc["metrics"][f"ti#{key}"]
        assert m["count"] == t["cycles"]
        assert m["min"] <= m["p50"] <= m["p99"] <= m["max"]
