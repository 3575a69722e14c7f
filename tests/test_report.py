"""The HTML report and the analysis behind it, on hand-made runs (the contract's
shapes) and on a real engine run: sections, figures, escaping, ratings, rebinning."""

from __future__ import annotations

from conftest import cli
import re
import subprocess
import sys

import pytest

from rtgauge.analysis.run.histograms import rebin_log
from rtgauge.analysis.studies.micro import micro_rows
from rtgauge.analysis.run.tire import hard_rt_limits, tire_points
from rtgauge.analysis.run.headline import headline
from rtgauge.report.html import render
from rtgauge.store import open_store
from test_report_builders import (
    HOSTILE, RATED_N, SYSTEM, full_run_documents, latency_document, linear_bins, log_linear_bins, store_run,
)

SECTIONS = ("summary", "systems", "latency", "micro", "tire", "method")


def stored(tmp_path, *runs_docs, systems=None) -> list:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    ids = [store_run(url, docs, system=(systems or [None] * len(runs_docs))[i]) for i, docs in enumerate(runs_docs)]
    with open_store(url) as s:
        return [s.get_run(i) for i in ids]


def test_rebin_spreads_coarse_bins_and_keeps_every_count():
    values = list(range(5000, 60000, 7))
    engine = rebin_log(log_linear_bins(values))
    cyclic = rebin_log(linear_bins([v // 1000 * 1000 for v in values]))
    assert sum(engine.values()) == pytest.approx(len(values))
    assert sum(cyclic.values()) == pytest.approx(len(values))
    # no comb: every plot bucket between the first and last has counts for both tools
    for counts in (engine, cyclic):
        assert all(counts.get(k, 0) > 0 for k in range(min(counts) + 1, max(counts)))
    # and the two tools' shapes agree bucket by bucket within a few percent in the bulk
    for k in range(min(engine) + 2, max(engine) - 2):
        assert cyclic[k] == pytest.approx(engine[k], rel=0.25)


@pytest.mark.parametrize("case, stars", [
    (dict(), 5),                                        # max 60 µs, no misses, no tuning
    (dict(tuned=True), 4),
    (dict(scale=4.0), 3),                               # worst 240 µs > 100 µs budget, no misses
    (dict(scale=4.0, tuned=True), 2),
    (dict(misses=200), 1),                              # 200 of 20,000 cycles > 0.1 %
    (dict(fallback=True), 0),
])
def test_rating_classes(tmp_path, case, stars):
    system = dict(SYSTEM, cmdline="quiet isolcpus=1 nohz_full=1" if case.get("tuned") else "quiet")
    docs = full_run_documents(scale=case.get("scale", 1.0), misses=case.get("misses", 0),
                              fallback=case.get("fallback", False), n=RATED_N)
    [run] = stored(tmp_path, docs, systems=[system])
    h = headline(run)
    assert h["rating"].stars == stars, h["rating"]
    assert h["worst_idle_us"] == pytest.approx(40.0 * case.get("scale", 1.0))
    assert h["worst_loaded_us"] == pytest.approx(60.0 * case.get("scale", 1.0)) and h["loaded_condition"] == "cpu"


def test_rating_budget_changes_the_class(tmp_path):
    [run] = stored(tmp_path, full_run_documents(scale=4.0, n=RATED_N))
    assert headline(run, budget_us=100)["rating"].stars == 3
    assert headline(run, budget_us=500)["rating"].stars == 5


def test_tire_headline_is_the_largest_n_without_misses(tmp_path):
    [run] = stored(tmp_path, full_run_documents(tire_cost=200.0))
    limits = {(lim["policy"], lim["threads"]): lim for lim in hard_rt_limits(tire_points(run))}
    # step = 200 ns·n/threads (×1.3 for other) misses when > 8 ms: fifo 1 thread holds 16000, loses 64000
    assert limits[("fifo", 1)]["max_masses"] == 16000 and limits[("fifo", 1)]["lost_at"] == 64000
    assert limits[("fifo", 2)]["max_masses"] == 64000
    assert limits[("other", 2)]["max_masses"] == 16000
    assert limits[("fifo", 4)]["max_masses"] >= limits[("fifo", 2)]["max_masses"]


def test_micro_rows_carry_the_published_figures(tmp_path):
    [run] = stored(tmp_path, full_run_documents())
    rows = {r.label: r for r in micro_rows([run])}
    two = rows["switch [threads=2]"]
    systems = {p.system for p in two.published}
    assert {"QNX Neutrino 6.5", "Xenomai 2.6.2.1"} <= systems
    # the interrupt study's context switch (an interrupt handler posts a semaphore) is
    # not the equal-priority yield ring: it is not beside it
    assert "RTEMS native" not in systems
    assert {p.system for p in rows["switch [threads=128]"].published} == {"QNX Neutrino 6.5", "Linux 2.6.33.7-rt30"}
    assert two.cells[run.id]["max"] == 18000


def test_report_has_every_section_and_figure(tmp_path):
    runs = stored(tmp_path, full_run_documents(n=RATED_N), full_run_documents(scale=2.0, misses=5, n=RATED_N),
                  systems=[None, dict(SYSTEM, hostname="rig-2", preempt_model="PREEMPT_DYNAMIC")])
    html = render(runs)
    for ident in SECTIONS:
        assert f"<section id='{ident}'" in html
    # per-CPU histogram curves, window series, the equation, heatmaps, real-fast curves
    # each plot twice: drawn for a wide screen and for a narrow one (report/svg.py)
    assert len(re.findall(r"<span class='pw'><svg[^>]*><title>[^<]*wake-up latency per CPU</title>", html)) == 6
    assert len(re.findall(r"<span class='pn'><svg[^>]*><title>[^<]*wake-up latency per CPU</title>", html)) == 6
    assert "CPU 0" in html and "CPU 1" in html
    assert "max latency per 1 s window" in html
    assert "T = Ti + Ts + Tw" in html
    assert "Real time, hard, at 10 ms (100 Hz): locked, fifo" in html and "Real time, soft, at 10 ms (100 Hz)" in html
    assert "Real-fast: wall time" in html and "t_spring" in html
    assert "★★★★★" in html and "★★☆☆☆" not in html  # second: 5 misses of 6000 → soft, untuned → 3 stars
    assert "★★★☆☆" in html
    # the differing fact is marked, an equal one is not
    assert re.search(r"<tr class='diff'><th class='l'>preemption model</th>", html)
    assert not re.search(r"<tr class='diff'><th class='l'>CPU</th>", html)
    assert "QNX Neutrino 6.5" in html


def test_report_is_self_contained_and_escapes_system_text(tmp_path):
    hostile = dict(SYSTEM, hostname=HOSTILE, cmdline="quiet </td><img src=x onerror=alert(1)> \"'")
    docs = full_run_documents()
    docs[0][0]["name"] = "latency@idle<script>"
    [run] = stored(tmp_path, docs, systems=[hostile])
    html = render([run])
    assert not re.search(r"https?://", html), "the report must not reference the network"
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;&lt;b&gt;" in html
    assert "onerror=alert(1)&gt;" in html


def test_fallback_measurement_is_flagged(tmp_path):
    [run] = stored(tmp_path, full_run_documents(fallback=True))
    html = render([run])
    assert "fallback: not real-time" in html
    assert "not real-time: measured without real-time scheduling" in html


def test_report_command_writes_the_latest_run_by_default(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store_run(url, full_run_documents())
    second = store_run(url, [(full_run_documents()[0][0], latency_document(hostname="rig-9"))])
    out = tmp_path / "report.html"
    p = cli(["report", "--db", url, "-o", str(out)], timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"(run {second})" in out.read_text() and "(run 1)" not in out.read_text()


@pytest.mark.parametrize("args, message", [
    (["report", "7"], "no run 7"),
    (["report", "x"], "'x' is not a run"),
    (["report", "--budget-us", "0"], "--budget-us 0 is out of range"),
])
def test_report_command_rejects_bad_input(tmp_path, args, message):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store_run(url, full_run_documents()[:1])
    p = cli([*args, "--db", url, "-o", str(tmp_path / "x.html")], timeout=60)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x.html").exists()


def test_report_of_a_missing_database_says_so_and_creates_nothing(tmp_path):
    p = cli(["report", "--db", str(tmp_path / "none.db")], timeout=60)
    assert p.returncode == 2 and "there is no results database" in p.stderr and not (tmp_path / "none.db").exists()


def test_report_of_a_real_engine_run(tmp_path, run_engine):
    """A real latency document from the engine renders with its per-CPU curves."""
    r = run_engine("latency", "--duration-s", "0.5", "--allow-fallback", timeout=60)
    assert r.status == 0, r.stderr
    job = {"name": "latency@idle", "tool": "engine", "test": "latency", "condition": "idle", "reference": False,
           "load": {}, "started_at": None, "duration_s": 0.5, "exit_status": 0, "command": []}
    [run] = stored(tmp_path, [(job, r.doc)])
    html = render([run])
    cpus = r.doc["env"]["cpus"]
    for cpu in cpus:
        assert f">CPU {cpu}<" in html
    assert headline(run)["worst_idle_us"] == pytest.approx(r.doc["metrics"]["ti"]["max"] / 1000)


def test_tire_sweep_bisection_results_are_the_headline(tmp_path):
    sweep = ({"name": "tire-sweep@idle", "tool": "engine", "test": "tire-sweep", "condition": "idle",
              "reference": False, "load": {}, "started_at": None, "duration_s": 1.0, "exit_status": 0, "command": []},
             {"schema": 1, "test": "tire-sweep", "ok": True, "params": {}, "env": {},
              "metrics": {"largest_masses#threads=2,policy=fifo": {"unit": "masses", "value": 57000},
                          "fit_tspring": {"unit": "ns", "value": 410.0}}, "verdicts": {}})
    [run] = stored(tmp_path, full_run_documents() + [sweep])
    limits = {(x["policy"], x["threads"]): x for x in headline(run)["tire"]}
    assert limits[("fifo", 2)]["max_masses"] == 57000        # the bisection beats the coarse grid
    assert limits[("fifo", 1)]["max_masses"] == 16000        # the grid where no sweep result exists
    assert "fit_tspring" in render([run])
