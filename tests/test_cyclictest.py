"""cyclictest's output translated into the contract: exact against its own figures."""

import json
import os
import shutil

import pytest

from rtgauge.tools import cyclictest
from conftest import needs_root

pytestmark = pytest.mark.alone


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
    # --loops: the job's wake-ups (1 s at 1 ms) counted from the first, as the engine counts
    # them. cyclictest ends every thread once one has its loops (its main loop stops at the
    # first), and its threads start one after another: one that started later (a few ms
    # under load, beside other programs) stops short by as many wake-ups
    cycles = [t["cycles"] for t in raw["thread"].values()]
    assert len(cycles) == len(cpus) and max(cycles) == 1000 and all(0 < c <= 1000 for c in cycles)
    assert doc["metrics"]["cycles"]["value"] == total == sum(cycles)
    assert doc["metrics"]["ti"]["max"] == max(t["max"] for t in raw["thread"].values()) * 1000
    assert doc["metrics"]["ti"]["min"] == min(t["min"] for t in raw["thread"].values()) * 1000
    for key, t in raw["thread"].items():
        m = doc["metrics"][f"ti#{key}"]
        assert m["count"] == t["cycles"]
        assert m["min"] <= m["p50"] <= m["p99"] <= m["max"]


DATA = os.path.join(os.path.dirname(__file__), "data", "cyclictest")
CT_JOB = dict(name="latency@cpu/cyclictest", tool="cyclictest", test="latency", condition="cpu",
              options={"interval-us": 1000, "duration-s": 1, "priority": 80, "histogram": 20000}, cpus=[0])


def real(name: str) -> bytes:
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def test_the_command_counts_the_jobs_wake_ups_not_cyclictests_own_time():
    cmd = cyclictest.command({"interval-us": 250, "duration-s": 1.5}, [0, 1], "/x.json", exe="cyclictest")
    assert "--loops=6000" in cmd and not any(c.startswith("--duration") for c in cmd)


@pytest.mark.parametrize("nan", [b"nan", b"-nan"])      # glibc prints either, by the sign of 0/0
def test_a_thread_without_a_cycle_reads_as_no_measurement_not_as_broken_json(nan):
    """The real document of a cyclictest stopped before its first wake-up (armhf, under
    emulation): its avg is printf's nan, not JSON. Read strictly it is "not valid JSON"
    (the symptom seen in the emulated lab); read as cyclictest's it is a measurement of
    nothing, said so, with no figure from cyclictest's initial min and max."""
    from rtgauge.errors import UserError
    from rtgauge.plan import Job
    from rtgauge.plan.execute import checked_document
    from rtgauge.store.validate import parse_document
    data = real("armhf-no-cycle.json").replace(b'"avg": nan', b'"avg": ' + nan)
    assert b'"avg": ' + nan + b"," in data and b'"cycles": 0' in data
    with pytest.raises(UserError, match=r"not valid JSON \(line 24: Expecting value\)"):
        parse_document(data, "the document")           # what the lab run said
    doc = checked_document(Job(**CT_JOB), data, "cyclictest's result on ssh://emu-armhf", 0, False)
    assert doc["ok"] is False and "measured no wake-up" in doc["error"] and "duration-s" in doc["error"]
    assert "not valid JSON" not in doc["error"]
    raw = cyclictest.load_json(os.path.join(DATA, "armhf-no-cycle.json"))
    assert raw["thread"]["0"]["avg"] is None
    d = cyclictest.to_document(raw, CT_JOB["options"], [0], 0, False)
    assert d["metrics"]["cycles"]["value"] == 0 and d["metrics"]["ti#0"]["max"] is None
    assert d["metrics"]["ti#0"]["min"] is None          # not cyclictest's initial 1000000 µs


def test_a_real_armhf_document_reads_unchanged():
    data = real("armhf-ok.json")
    assert cyclictest.readable_json(data) == data       # nothing but a nan is touched
    from rtgauge.plan import Job
    from rtgauge.plan.execute import checked_document
    doc = checked_document(Job(**CT_JOB), data, "cyclictest's result", 0, False)
    raw = json.loads(data)
    assert doc["ok"], doc.get("error")
    assert doc["metrics"]["cycles"]["value"] == raw["thread"]["0"]["cycles"] == 639
    assert doc["metrics"]["ti"]["max"] == 8966 * 1000 and doc["metrics"]["ti"]["min"] == 135 * 1000
