"""Rhealstone composite: exact arithmetic on a hand-made run, the choice of the canonical
measurement per component, missing components, and real engine documents through the store."""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction

import pytest

from conftest import is_root
from rtgauge.analysis.studies.rhealstone import COMPONENTS, format_figures, rhealstone, rhealstone_figures
from rtgauge.records import Measurement, Run
from rtgauge.store import open_store


def dist(avg, mx, unit="ns"):
    return {"kind": "distribution", "unit": unit, "count": 100, "min": 1, "avg": avg, "max": mx}


def meas(name, test, metric, avg, mx, condition="idle", params=None, unit="ns", **kw) -> Measurement:
    m = {"name": name, "test": test, "condition": condition, "tool": "engine", "reference": False,
         "ok": True, "params": params or {}, "metrics": {metric: dist(avg, mx, unit)}}
    m.update(kw)
    return Measurement.from_dict(m)      # read as the store reads a stored measurement


def handmade_run() -> Run:
    ms = [
        meas("switch-2", "switch", "switch", 1000, 2000, params={"threads": 2}),
        meas("switch-10", "switch", "switch", 7777, 99999, params={"threads": 10}),
        meas("preempt", "preempt", "preempt", 2000, 4000, params={"event": "sem"}),
        meas("latency", "latency", "ti", 3000, 6000),
        meas("latency/cyclictest", "latency", "ti", 1, 1, tool="cyclictest", reference=True),
        meas("shuffle-mutex", "shuffle", "shuffle", 1, 1, params={"primitive": "mutex"}),
        meas("shuffle", "shuffle", "shuffle", 4000, 8000, params={"primitive": "sem"}),
        meas("deadlock-break", "deadlock-break", "deadlock_break", 5000, 10000, params={"protocol": "inherit"}),
        meas("message-pipe", "message", "latency", 1, 1, params={"transport": "pipe"}),
        meas("message-mq", "message", "latency", 9000, 18000, params={"transport": "mq"}),
        meas("failed-switch", "switch", "switch", 1, 1, params={"threads": 2}, ok=False),
        # under load only two components were measured
        meas("switch-2", "switch", "switch", 1500, 30000, condition="cpu", params={"threads": 2}),
        meas("latency", "latency", "ti", 4500, 90000, condition="cpu"),
    ]
    return Run.from_dict({"id": 1, "hostname": "rig-1", "kernel_release": "6.1.0-rt"}, ms)


def test_exact_figure_from_known_component_times():
    fig = rhealstone(handmade_run().measurements, "idle")
    assert fig["complete"] and fig["missing"] == []
    # averages 1,2,3,4,5,9 us: mean 4 us -> 250,000 per second; maxima twice as long
    assert fig["mean_avg_ns"] == 4000 and fig["rhealstones_avg"] == 250_000
    assert fig["mean_max_ns"] == 8000 and fig["rhealstones_worst"] == 125_000
    # the canonical variants were chosen: 2 threads, sem shuffle, mq, engine, ok only
    c = fig["components"]
    assert c["task_switch"]["measurement"] == "switch-2"
    assert c["semaphore_shuffle"]["measurement"] == "shuffle"
    assert c["message_latency"]["measurement"] == "message-mq"
    assert c["interrupt_latency"]["avg_ns"] == 3000


def test_formula_is_inverse_of_mean_in_seconds():
    times = [Fraction(1234, 1), Fraction(98765, 3), Fraction(5), Fraction(1), Fraction(77), Fraction(4000)]
    ms = [meas(c.name, c.test, c.metric, float(t), float(t) * 2, params=dict(c.prefer))
          for c, t in zip(COMPONENTS, times)]
    fig = rhealstone(ms, "idle")
    mean_s = sum(Fraction(float(t)) for t in times) / 6 / 10**9
    assert fig["rhealstones_avg"] == float(1 / mean_s)
    assert fig["rhealstones_worst"] == float(1 / (2 * mean_s))


def test_missing_components_are_named_and_figure_is_partial():
    run = handmade_run()
    figures = rhealstone_figures(run)
    by_cond = {f["condition"]: f for f in figures}
    assert set(by_cond) == {"idle", "cpu"}
    cpu = by_cond["cpu"]
    assert not cpu["complete"]
    assert cpu["missing"] == ["preemption", "semaphore_shuffle", "deadlock_break", "message_latency"]
    assert cpu["mean_avg_ns"] == 3000 and cpu["rhealstones_avg"] == pytest.approx(1e9 / 3000)
    assert cpu["system"] == {"hostname": "rig-1", "kernel": "6.1.0-rt"}
    text = format_figures(figures)
    assert "250,000/s from averages" in text and "partial: missing preemption" in text


def test_units_are_converted_and_nothing_measured_gives_no_figure():
    ms = [meas("latency", "latency", "ti", 3, 6, unit="us")]
    fig = rhealstone(ms, "idle")
    assert fig["components"]["interrupt_latency"]["avg_ns"] == 3000
    assert fig["rhealstones_avg"] == pytest.approx(1e9 / 3000)
    empty = rhealstone([], "idle")
    assert empty["rhealstones_avg"] is None and len(empty["missing"]) == 6
    assert rhealstone_figures(Run(id=None)) == []


ENGINE_JOBS = [
    ("switch", ["--threads", "2", "--iterations", "2000"]),
    ("preempt", ["--iterations", "1000"]),
    ("latency", ["--duration-s", "0.3", "--cpus", "0"]),
    ("shuffle", ["--iterations", "2000"]),
    ("deadlock-break", ["--iterations", "100"]),
    ("message", ["--transport", "mq", "--iterations", "1000"]),
]


@pytest.mark.skipif(not is_root(), reason="needs root for SCHED_FIFO")
@pytest.mark.shared
def test_real_documents_through_the_store(engine_bin, tmp_path):
    listed = subprocess.run([engine_bin, "--list"], capture_output=True, text=True).stdout.split()
    missing = [t for t, _ in ENGINE_JOBS if t not in listed]
    if missing:
        pytest.skip(f"engine has no {', '.join(missing)} test yet")
    with open_store(str(tmp_path / "r.db")) as store:
        run_id = store.begin_run({"hostname": "here", "kernel_release": "k"}, [], "micro", "test", [])
        for test, args in ENGINE_JOBS:
            p = subprocess.run([engine_bin, test, *args], capture_output=True, text=True, timeout=120)
            doc = json.loads(p.stdout)
            assert doc["ok"], doc.get("error")
            store.add_measurement(run_id, {"name": test, "test": test, "condition": "idle",
                                           "tool": "engine"}, doc)
        store.finish_run(run_id, "complete")
        run = store.get_run(run_id)
    (fig,) = rhealstone_figures(run)
    assert fig["complete"], fig["missing"]
    comps = fig["components"]
    for c in COMPONENTS:
        assert 0 < comps[c.name]["avg_ns"] <= comps[c.name]["max_ns"]
    # recompute from the stored statistics: the figure is 1e9 over their mean
    mean = sum(Fraction(v["avg_ns"]) for v in comps.values()) / 6
    assert fig["rhealstones_avg"] == pytest.approx(float(Fraction(10**9) / mean), rel=1e-12)
    assert fig["rhealstones_worst"] <= fig["rhealstones_avg"]
