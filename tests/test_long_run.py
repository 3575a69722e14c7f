"""Long runs: --duration overrides every latency job, long jobs are stored in segments
as they end (a run killed mid-way keeps the finished segments), and --live runs
(tests/test_live_view.py follows the engine's status)."""

import os
import signal

import pytest

from conftest import needs_root
from rtgauge.errors import UserError
from rtgauge.plan import Job
from rtgauge.plan.execute import apply_overrides, parse_duration, split_segments
from rtgauge.store import open_store
from test_loads import load_processes, rtgauge, rtgauge_popen, wait_until

# real runs, but what they assert (segments stored, counts of deadlines elapsed, the
# load gone with its rtgauge) holds on a loaded machine (tests/conftest.py)
pytestmark = pytest.mark.shared

PROFILE = """
name = "long"
[settings]
warmup_s = 0.3
[[jobs]]
name = "latency"
test = "latency"
conditions = ["{condition}"]
[jobs.options]
interval-us = 1000
duration-s = 1
cycles = 500
priority = 80
"""


def test_durations_are_parsed():
    assert parse_duration("24h") == 86400 and parse_duration("90s") == 90
    assert parse_duration("10m") == 600 and parse_duration("1.5") == 1.5 and parse_duration("2d") == 172800
    for bad in ("", "ten minutes", "5y", "0s", "400d"):
        with pytest.raises(UserError):
            parse_duration(bad)


def test_duration_overrides_latency_jobs_and_segments_split_them():
    jobs = [Job("latency@idle", "engine", "latency", "idle", {"duration-s": 30, "cycles": 9}, [0]),
            Job("cost@idle", "engine", "overhead", "idle", {"rounds": 3}, [0])]
    apply_overrides(jobs, 7.5, None)
    assert jobs[0].options == {"duration-s": 7.5} and jobs[0].expected_s == 7.5
    assert jobs[1].options == {"rounds": 3}
    segs = split_segments(jobs[0], 3)
    assert [s["duration-s"] for s in segs] == [3, 3, 1.5]
    assert split_segments(jobs[0], 10) == [{"duration-s": 7.5}]
    assert split_segments(jobs[1], 1) == [{"rounds": 3}]


@needs_root
def test_segments_are_stored_and_survive_kill_9(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(condition="cpu"))
    db = tmp_path / "r.db"
    p = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report",
                      "--duration", "30s", "--segment", "2s")
    try:
        def stored():
            if not db.exists():
                return 0
            with open_store(str(db)) as store:
                rid = store.latest_run_id()
                return len(store.get_run(rid).to_dict()["measurements"]) if rid else 0
        assert wait_until(lambda: stored() >= 3, 60), "three segments were not stored in time"
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert wait_until(lambda: not load_processes(p.pid), 10), "the load outlived rtgauge"
    with open_store(str(db)) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    # it died: nobody finished the run, and the next opening of the store found it abandoned
    assert run["status"] == "abandoned" and "pid" in run["note"]
    segs = sorted(run["measurements"], key=lambda m: m["load"]["segment"]["index"])
    assert len(segs) >= 3
    for i, m in enumerate(segs, 1):
        assert m["name"] == "latency@cpu" and m["segment"] == i and m["ok"]
        assert m["load"]["segment"] == {"index": i, "of": 15, "job": "latency@cpu", "duration_s": 2.0}
        ncpu = len(m["document"]["env"]["threads"])
        # 2 s at 1 kHz per thread (the profile's cycle count was overridden by --duration):
        # the deadlines elapsed are the clock's, however busy the machine (those skipped
        # after an overrun count), give or take the last one per thread
        elapsed = m["metrics"]["cycles"]["value"] + m["metrics"]["skipped"]["value"]
        assert abs(elapsed - 2000 * ncpu) <= ncpu, elapsed
        assert m["load"]["cpu_s"] > 0.3 and m["load"]["alive_until_stop"]


@needs_root
def test_live_run_and_duration_option(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(condition="idle"))
    db = tmp_path / "r.db"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report", "--duration", "3s", "--live")
    assert p.returncode in (0, 1), p.stderr
    with open_store(str(db)) as store:
        (m,) = store.get_run(store.latest_run_id()).to_dict()["measurements"]
    assert m["name"] == "latency@idle" and m["params"]["duration_s"] == 3
    assert "segment" not in m["load"]


@needs_root
def test_a_job_in_segments_counts_once_in_the_runs_note(tmp_path):
    """A job stored in two segments is one job measured: the note reads "1 of 1 jobs
    measured" (it counted segments: the full cyclictest study's two latency jobs, two
    segments each, read "7 of 5 jobs measured")."""
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(condition="idle"))
    db = tmp_path / "r.db"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report", "--duration", "2s",
                "--segment", "1s")
    assert p.returncode == 0, p.stdout + p.stderr
    with open_store(str(db)) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    assert len(run["measurements"]) == 2 and run["status"] == "complete"
    assert run["note"] == "1 of 1 jobs measured", run["note"]
