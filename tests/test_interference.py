"""Interference accounted per measurement: the hypervisor's steal time on the measured
CPUs, from /proc/stat before and after (rtgauge/trace/counters.py), stored in
env.counters.steal and shown by `rtgauge show`."""

from __future__ import annotations

import os

import pytest

from rtgauge.trace.counters import counters, steal_between, take_snapshot

pytestmark = pytest.mark.alone

STAT_BEFORE = """cpu  100 0 100 1000 0 0 0 30 0 0
cpu0 50 0 50 500 0 0 0 10 0 0
cpu1 50 0 50 500 0 0 0 20 0 0
intr 1
"""
STAT_AFTER = """cpu  300 0 200 1180 0 0 0 150 0 0
cpu0 150 0 100 590 0 0 0 10 0 0
cpu1 150 0 100 590 0 0 0 140 0 0
intr 2
"""


def test_steal_per_cpu_from_two_proc_stat_texts():
    tick = os.sysconf("SC_CLK_TCK")
    s = steal_between(STAT_BEFORE, STAT_AFTER, [0, 1])
    assert s["ms"] == {"0": 0.0, "1": round(120 * 1000 / tick, 1)}
    # cpu1: 120 ticks stolen of 100 + 50 + 90 + 120 = 360
    assert s["share"]["1"] == round(120 / 360, 4) and s["share"]["0"] == 0.0
    assert s["max_share"] == s["share"]["1"] and s["total_ms"] == s["ms"]["1"]
    assert "unavailable" in steal_between("", "", [0])


def test_every_measurement_records_the_steal_of_its_cpus():
    cpus = sorted(os.sched_getaffinity(0))
    before = take_snapshot(cpus)
    sum(range(2_000_000))
    c = counters(before, take_snapshot(cpus), cpus, {})
    steal = c["steal"]
    assert set(steal["ms"]) == {str(c) for c in cpus}
    assert all(v >= 0 for v in steal["ms"].values()) and 0 <= steal["max_share"] <= 1
