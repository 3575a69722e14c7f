"""A job finishes or says why, never killed by a default (docs/engine.md "The watchdog").

Every job of every shipped profile fits its engine watchdog and the host's deadline; a
watchdog that fires keeps what was measured and marks the job incomplete (stored, shown,
and read by the verdict as incomplete), not failed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli

# real engines at SCHED_FIFO, short and tolerant of a loaded machine (tests/conftest.py)
pytestmark = pytest.mark.shared
from rtgauge.catalogue import catalogue
from rtgauge.plan import (ITERATION_CEILING_S, bounded_seconds, build_plan, engine_watchdog_s,
                          host_deadline_s, planned_seconds)
from rtgauge.profiles import load_profile

PROFILES = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "rtgauge" / "profiles").glob("*.toml"))


def engine_jobs(profile: str):
    return [j for j in build_plan(load_profile(profile)) if j.tool == "engine"]


@pytest.mark.parametrize("profile", PROFILES)
def test_every_shipped_job_fits_its_watchdog(profile):
    for job in engine_jobs(profile):
        watchdog = engine_watchdog_s(job.test, job.options)
        host = host_deadline_s(job)
        if watchdog is None:      # a test without a watchdog of its own: the host's deadline bounds it
            planned = planned_seconds(job.test, job.options)
            assert planned is None or planned < host, (profile, job.name, planned, host)
            continue
        length = bounded_seconds(job.test, job.options)
        assert length is not None, f"{profile}: {job.name} has a watchdog but no planned length"
        assert length <= watchdog, f"{profile}: {job.name} plans {length:.1f} s beside a {watchdog:.0f} s watchdog"
        assert host > watchdog + 2, f"{profile}: {job.name}: the host would stop it before the engine's watchdog"


def test_the_fixed_default_would_not_fit_the_studies():
    """The broken method: the engine's fixed 30 s default against the studies' preemption
    jobs (100,000 at 1 ms; 2,000,000 at 250 us). The check above must be able to fail."""
    default = catalogue().test("preempt").option("timeout-s").default
    long_ones = [(p, j.name, planned_seconds(j.test, j.options)) for p in ("tire-study", "interrupt-study")
                 for j in engine_jobs(p) if j.test == "preempt" and j.options.get("event") == "timer"]
    assert long_ones and all(planned > float(default) for _, _, planned in long_ones), long_ones


def test_iteration_ceiling_is_far_above_what_the_tests_take(run_engine):
    """The bound used for a count without a period holds with a wide margin: the largest
    switch ring of the evaluation, timed here. The median switch is what a switch costs;
    the average also holds the stretches other tests' real-time threads took the CPU in
    this pass (it read over 10 us beside them twice), which the margin is there for."""
    r = run_engine("switch", "--threads", "1000", "--iterations", "20000", "--policy", "fifo", timeout=120)
    assert r.status == 0, r.stderr
    per_switch_s = r.doc["metrics"]["switch"]["p50"] / 1e9
    assert per_switch_s * 10 < ITERATION_CEILING_S, per_switch_s


def test_a_fired_watchdog_keeps_what_was_measured(run_engine):
    r = run_engine("preempt", "--event", "timer", "--iterations", "3000", "--timeout-s", "1", timeout=60)
    assert r.status == 0, r.stderr
    inc = r.doc["env"]["incomplete"]
    assert inc["by"] == "watchdog" and inc["asked"] == 3000 and 0 < inc["measured"] < 3000
    assert r.doc["ok"] is True and r.doc["metrics"]["preempt"]["count"] + r.doc["metrics"]["low_not_running"]["value"] \
        <= inc["measured"]
    assert "watchdog stopped the run" in r.stderr


def test_the_derived_watchdog_outlasts_the_planned_run(run_engine):
    """preempt --event timer without --timeout-s: the watchdog follows the plan."""
    r = run_engine("preempt", "--event", "timer", "--iterations", "200", "--period-us", "1000", timeout=60)
    assert r.status == 0, r.stderr
    assert r.doc["env"]["timeout_ns"] >= 200 * 1_000_000 + 30_000_000_000
    assert "incomplete" not in r.doc["env"]


def test_a_stopped_early_job_is_stored_and_judged_incomplete(tmp_path):
    profile = tmp_path / "short.toml"
    profile.write_text('name = "short"\n[settings]\nwarmup_s = 0.0\n'
                       '[[jobs]]\nname = "preemption"\ntest = "preempt"\nconditions = ["idle"]\n'
                       '[jobs.options]\nevent = "timer"\niterations = 3000\ntimeout-s = 1\n')
    db = tmp_path / "r.db"
    p = cli(["run", "--profile", str(profile), "--db", str(db), "--no-report", "--json"], timeout=120)
    assert p.returncode == 0, p.stderr
    m = [m for m in json.loads(p.stdout)["measurements"] if m["name"].startswith("preemption")][0]
    assert m["ok"] is True and m["env"]["incomplete"]["measured"] < 3000
    shown = cli(["show", "--db", str(db), "--format", "tsv"], timeout=60)
    assert shown.returncode == 0, shown.stderr
    detail = cli(["show", str(json.loads(p.stdout)["id"]), "--db", str(db)], timeout=60,
                 env=dict(os.environ, COLUMNS="200"))
    assert "stopped by the watchdog" in detail.stdout, detail.stdout
