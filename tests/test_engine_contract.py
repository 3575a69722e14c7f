"""The JSON contract (docs/engine.md), checked on a short run of every test the
engine lists."""

from __future__ import annotations

import pytest

from conftest import needs_root
from rtgauge.catalogue import catalogue

pytestmark = pytest.mark.shared

# Short, default-ish runs of the tests we know; a test added later gets
# --duration-s 0.2 when it has that option, else its defaults.
QUICK = {
    "latency": ["--duration-s", "0.3", "--histogram", "200"],
    "overhead": ["--iterations", "20000", "--rounds", "3"],
    "spin": ["--duration-s", "0.3", "--busy-us", "200", "--period-us", "50000"],
    "tire": ["--steps", "20", "--masses", "400"],     # the default is 60 s of real time
    "timer-sustain": ["--probe-s", "0.05", "--max-probes", "4"],
}
PERCENTILES = ["min", "p50", "p90", "p99", "p999", "p9999", "max"]
ENV_FIELDS = ["policy", "priority", "fallback", "cpus", "mlocked", "clock", "timestamp_cost_ns",
              "dma_latency", "kernel"]


def listed_tests(engine_bin: str) -> list[str]:
    return list(catalogue(engine_bin).tests)


def quick_args(engine_bin: str, test: str) -> list[str]:
    if test in QUICK:
        return QUICK[test]
    return ["--duration-s", "0.2"] if "duration-s" in catalogue(engine_bin).tests[test].options else []


def option_names(engine_bin: str, test: str) -> list[str]:
    return [name.replace("-", "_") for name in catalogue(engine_bin).tests[test].options]


def check_distribution(name: str, m: dict) -> None:
    for field in ["unit", "count", "min", "avg", "stddev", *PERCENTILES, "histogram"]:
        assert field in m, f"{name} lacks {field}"
    h = m["histogram"]
    assert h["scheme"] == "log-linear" and h["sub_buckets"] == 128
    assert sum(c for _, _, c in h["bins"]) == m["count"], name
    assert all(lo <= hi and c > 0 for lo, hi, c in h["bins"]), name
    if m["count"]:
        values = [m[p] for p in PERCENTILES]
        assert values == sorted(values), f"{name}: percentiles out of order {values}"
        assert m["min"] <= m["avg"] <= m["max"], name
        assert m["stddev"] >= 0
        assert h["bins"][0][0] <= m["min"] and m["max"] <= h["bins"][-1][1]
    if "linear" in m:
        lin = m["linear"]
        assert sum(lin["counts"]) + lin["overflow"] == m["count"], name


def check_metric(name: str, m: dict) -> None:
    assert "unit" in m, name
    if "value" in m:
        assert isinstance(m["value"], (int, float))
    elif "window_ns" in m:
        assert m["window_ns"] > 0 and isinstance(m["start_ns"], int)
        assert all(v is None or isinstance(v, int) for v in m["max"])
    else:
        check_distribution(name, m)


@needs_root
def test_every_listed_test_prints_a_contract_document(engine_bin, run_engine):
    tests = listed_tests(engine_bin)
    assert {"latency", "spin", "overhead"} <= set(tests)
    for test in tests:
        r = run_engine(test, *quick_args(engine_bin, test), timeout=60)
        doc = r.doc
        assert r.status == 0, (test, r.stderr)
        assert doc["schema"] == 1 and doc["test"] == test
        assert doc["ok"] is True and doc["interrupted"] is False
        assert set(option_names(engine_bin, test)) == set(doc["params"]), test
        for field in ENV_FIELDS:
            assert field in doc["env"], f"{test}: env lacks {field}"
        assert doc["env"]["dma_latency"] == "held at 0" or doc["env"]["dma_latency"].startswith("unavailable: ")
        assert doc["metrics"], test
        info = catalogue(engine_bin).tests[test]
        for name, m in doc["metrics"].items():
            check_metric(f"{test}.{name}", m)
            declared = info.metric_for(name)
            assert declared, f"{test} emits {name}, which its descriptor does not declare"
            assert declared.unit == m["unit"], f"{test}.{name}: unit {m['unit']}, declared {declared.unit}"
        for name, v in doc["verdicts"].items():
            assert isinstance(v["pass"], bool) and isinstance(v["detail"], str), name


@needs_root
def test_params_record_defaults_with_their_types(run_engine):
    doc = run_engine("latency", "--cycles", "20").doc
    p = doc["params"]
    assert p["interval_us"] == 1000 and isinstance(p["interval_us"], int)
    assert p["cycles"] == 20 and p["priority"] == 80 and p["policy"] == "fifo"
    assert p["duration_s"] == 10 and p["clock"] == "monotonic" and p["break"] is False
    assert p["max_latency_us"] is None


@needs_root
def test_periodic_metrics_per_thread(run_engine):
    doc = run_engine("latency", "--cycles", "50", "--threads", "2").doc
    m = doc["metrics"]
    for base in ["ti", "ts", "tw", "misses", "cycles", "dropped", "ti_window_max"]:
        assert base in m and f"{base}#0" in m and f"{base}#1" in m
    assert m["cycles"]["value"] == m["cycles#0"]["value"] + m["cycles#1"]["value"] == 100
    assert m["ti"]["max"] == max(m["ti#0"]["max"], m["ti#1"]["max"])
    assert m["ti"]["min"] == min(m["ti#0"]["min"], m["ti#1"]["min"])
    assert [t["index"] for t in doc["env"]["threads"]] == [0, 1]
    # the slack is what is left of the period: Ti + Ts + Tw = T for every cycle
    assert m["ti"]["avg"] + m["ts"]["avg"] + m["tw"]["avg"] == pytest.approx(1_000_000, abs=1)
