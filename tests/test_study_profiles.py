"""The shipped study profiles (docs/studies.md): each validates against the engine,
follows its study's method, has a shorter -quick variant with the same jobs; flags a
profile wants only where available (latency --split) degrade with a note; the
cheapest quick profile runs end to end into a store."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import rtgauge.profiles

from conftest import cli, needs_mount_namespace, needs_root, without_tracefs
from rtgauge.plan.checks import validate_engine_jobs
from rtgauge.errors import UserError
from rtgauge.plan import Job, build_plan, plan_seconds
from rtgauge.plan.optional import resolve_optional
from rtgauge.profiles import STUDIES, load_profile, parse_profile

ALL = [s + v for s in STUDIES for v in ("", "-quick")]


@pytest.mark.parametrize("name", ALL)
def test_profile_validates_with_the_engine(name, engine_bin, monkeypatch):
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_bin)
    p = load_profile(name)
    assert p.name == name and p.description
    jobs = build_plan(p)
    validate_engine_jobs(jobs)        # the engine's --dry-run accepts every job's options


@pytest.mark.parametrize("study", STUDIES)
def test_quick_variant_has_the_same_jobs_and_is_shorter(study):
    full, quick = load_profile(study), load_profile(study + "-quick")
    shape = lambda p: [(j.name, j.test, j.conditions, j.cross_check, j.if_available) for j in p.jobs]
    assert shape(full) == shape(quick)
    fs, qs = plan_seconds(build_plan(full), full.warmup_s), plan_seconds(build_plan(quick), quick.warmup_s)
    assert qs < fs or study == "tire-study"
    if full.tire:
        assert not full.tire.short and quick.tire.short
        assert quick.tire.threads == full.tire.threads and quick.tire.policies == full.tire.policies


def job(p, name):
    return next(j for j in p.jobs if j.name == name)


def test_interrupt_study_method():
    lat = job(load_profile("interrupt-study"), "interrupt-latency")
    o = lat.options
    assert (o["interval-us"], o["cycles"], o["priority"], o["policy"]) == (250, 2_000_000, 99, "fifo")
    assert lat.conditions == ["idle", "ping-tcp", "ipi"] and lat.if_available == ["split"]
    assert job(load_profile("interrupt-study"), "context-switch").conditions == ["idle", "ping-tcp", "ipi"]
    assert plan_seconds(build_plan(load_profile("interrupt-study")), 5.0) >= 3 * 2 * 500


def test_cyclictest_study_method():
    lat = job(load_profile("cyclictest-study"), "latency")
    o = lat.options
    assert o["duration-s"] * 1e6 / o["interval-us"] == 1_000_000 and o["priority"] == 99
    # rtla timerlat where the kernel has it: the kernel-mode and timer-IRQ rows (docs/studies.md)
    assert lat.conditions == ["idle", "cpu"] and lat.cross_check == ["cyclictest", "rtla"]


def test_rtos_evaluation_method():
    p = load_profile("rtos-evaluation")
    switches = sorted(j.options["threads"] for j in p.jobs if j.test == "switch")
    assert switches == [2, 10, 128, 1000]
    assert all(j.options["policy"] == "fifo" for j in p.jobs if j.test == "switch")
    assert job(p, "sem-p").options["waiters"] == 128
    assert {j.test for j in p.jobs} >= {"tick", "switch", "thread", "thr-new", "thr-rr", "sem", "sem-lck",
                                         "sem-rel", "mutex", "mut-arc", "latency", "irq-gap", "timer-sustain"}
    # the analogues of IRQ_P_DLT and IRQ_S_SUS (docs/studies.md), at the IRQ tests' priority
    assert job(p, "irq-p-dlt").test == "irq-gap" and job(p, "irq-s-sus").test == "timer-sustain"
    sus = job(p, "irq-s-sus").options
    assert (sus["max-period-us"], sus["min-period-us"], sus["priority"]) == (1000, 10, 99)


def test_tire_study_method():
    t = load_profile("tire-study").tire
    assert t.steps == t.realfast_steps == t.pretest_steps == 6000 and t.period_ms == 10.0
    assert t.policies == ["other", "fifo"] and t.realfast and t.pretest
    cpus = len(os.sched_getaffinity(0))
    assert t.threads[0] == 1 and t.threads[-1] == 2 * cpus and cpus in t.threads


def test_the_announced_length_says_the_sweep():
    """A run announces its jobs' minutes; the tire study's 8 jobs take 2 min and its
    sweep hours, so the announcement must not stop at the jobs' minutes (it did: "about
    2.2 min" for a run of hours). The sweep's length is not known before it runs: its
    bounds are said."""
    from rtgauge.plan import sweep_jobs, sweep_outline
    (job,) = sweep_jobs(load_profile("tire-study"))
    said = sweep_outline(job)
    assert said.startswith("then the tire sweep: up to 13 model sizes x ")
    assert f"x {len(job.spec.threads)} thread counts x 2 policies, each real-time probe 60 s" in said
    assert "hours" in said
    assert sweep_jobs(load_profile("quick")) == []


BASE = '''
name = "t"
[[jobs]]
name = "j"
test = "{test}"
if_available = {wanted}
'''


@pytest.mark.parametrize("test, wanted, words", [
    ("switch", '["split"]', "only flags of a latency test"),
    ("latency", '["histogram"]', "only flags of a latency test"),
    ("latency", '"split"', "must be a list"),
])
def test_bad_if_available(test, wanted, words):
    with pytest.raises(UserError, match=words):
        parse_profile(BASE.format(test=test, wanted=wanted), "t.toml")


def test_no_mount_tracefs_goes_with_the_split_to_the_engine(engine_bin, monkeypatch):
    """run --no-mount-tracefs: a job that gets the split also gets the engine's opt-out."""
    from rtgauge.plan import optional
    monkeypatch.setattr(optional, "try_flag", lambda test, flag, cpus, mount: (None, []))
    [j] = build_plan(parse_profile(BASE.format(test="latency", wanted='["split"]'), "t.toml"))
    resolve_optional([j], lambda s: None, mount_tracefs=False)
    assert "--split" in j.engine_args() and "--no-mount-tracefs" in j.engine_args()


MOUNT_NOTE = "tracefs was not mounted: mounted it at /sys/kernel/tracing"


def engine_on_a_fresh_machine(engine_bin, tmp_path) -> str:
    """The engine, each run in its own mount namespace without tracefs (conftest)."""
    wrapper = tmp_path / "engine-without-tracefs"
    wrapper.write_text(f"#!/bin/sh\nexec {shlex.join(without_tracefs([engine_bin]))} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


@needs_root
def test_split_is_used_where_the_engine_can(engine_bin, monkeypatch):
    """Here, as the machine is (tracefs mounted or not: as root the engine mounts it)."""
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_bin)
    [j] = build_plan(parse_profile(BASE.format(test="latency", wanted='["split"]'), "t.toml"))
    said = []
    resolve_optional([j], said.append)
    assert j.options.get("split") is True and "no-mount-tracefs" not in j.options
    assert all(MOUNT_NOTE in n for n in j.notes) and said == j.notes


@needs_mount_namespace
def test_split_on_a_fresh_machine_mounts_tracefs_and_notes_it(engine_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_on_a_fresh_machine(engine_bin, tmp_path))
    [j] = build_plan(parse_profile(BASE.format(test="latency", wanted='["split"]'), "t.toml"))
    said = []
    resolve_optional([j], said.append)
    assert j.options.get("split") is True
    [note] = j.notes                 # stored with every measurement of the job (env.notes)
    assert MOUNT_NOTE in note and said == [note]


@needs_mount_namespace
def test_split_on_a_fresh_machine_with_no_mount_tracefs_is_left_out(engine_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_on_a_fresh_machine(engine_bin, tmp_path))
    [j] = build_plan(parse_profile(BASE.format(test="latency", wanted='["split"]'), "t.toml"))
    said = []
    resolve_optional([j], said.append, mount_tracefs=False)
    assert "split" not in j.options and "no-mount-tracefs" not in j.options
    [note] = j.notes
    assert note.startswith("--split left out") and "not mounted" in note and len(said) == 1


@needs_root
def test_split_left_out_with_a_note_where_the_engine_cannot(engine_bin, tmp_path, monkeypatch):
    """The same engine run as an unprivileged user cannot read the trace events."""
    wrapper = tmp_path / "engine-as-nobody"
    wrapper.write_text(f"#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {engine_bin} \"$@\"\n")
    wrapper.chmod(0o755)
    tmp_path.chmod(0o755)
    monkeypatch.setenv("RTGAUGE_ENGINE", str(wrapper))
    jobs = build_plan(parse_profile(BASE.format(test="latency", wanted='["split"]'), "t.toml"))
    said = []
    resolve_optional(jobs, said.append)
    assert "split" not in jobs[0].options and "--split" not in jobs[0].engine_args()
    assert jobs[0].notes and "root" in jobs[0].notes[0] and len(said) == 1


def test_notes_are_stored_with_the_measurement(engine_bin, tmp_path, monkeypatch):
    from rtgauge.plan.execute import RunSettings, execute
    from rtgauge.store import open_store
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_bin)
    j = Job("cost@idle", "engine", "overhead", "idle", {"iterations": 1000, "rounds": 1, "allow-fallback": True},
            [0], notes=["--split left out (unavailable here): because"])
    url = f"sqlite:///{tmp_path / 'r.db'}"
    from test_report_builders import SYSTEM
    with open_store(url) as store:
        run_id = store.begin_run(SYSTEM, [], "t", "", ["pytest"])
        status, outcomes = execute(store, run_id, [j], 0.0, settings=RunSettings(warmup_s=0.0, say=lambda s: None))
        [m] = store.get_run(run_id).to_dict()["measurements"]
    assert status == "complete" and m["env"]["notes"] == ["--split left out (unavailable here): because"]


@needs_mount_namespace
@pytest.mark.shared
def test_interrupt_study_quick_runs_end_to_end(engine_bin, tmp_path):
    """The cheapest study (2 s per latency job, 10 s per context-switch job): idle,
    ping-tcp and ipi at 4 kHz, priority 99, split into ti_irq/ti_sched, into a store; `show
    --json` reads it back. On a machine in its fresh state (tracefs not mounted: a
    private mount namespace without it), the split mounts tracefs and says so. The shipped
    profile as it is, but for its preemptions: 4,000 a condition, not 40,000 (1 s, not 10)."""
    db = tmp_path / "r.db"
    env = dict(os.environ, RTGAUGE_ENGINE=engine_bin)
    shipped = (Path(rtgauge.profiles.__file__).parent / "interrupt-study-quick.toml").read_text()
    assert shipped.count("iterations = 40000") == 1
    profile = tmp_path / "interrupt-study-quick.toml"
    profile.write_text(shipped.replace("iterations = 40000", "iterations = 4000"))
    p = subprocess.run(without_tracefs([sys.executable, "-m", "rtgauge", "run", "--profile",
                                        str(profile), "--duration", "2s", "--allow-netns",
                                        "--db", str(db), "--no-report"]),
                       capture_output=True, text=True, env=env, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    shown = cli(["show", "latest", "--json", "--db", str(db)], env=env, check=True)
    run = json.loads(shown.stdout)
    assert run["profile"] == "interrupt-study-quick" and run["status"] == "complete"
    lat = {m["condition"]: m for m in run["measurements"] if m["test"] == "latency"}
    assert set(lat) == {"idle", "ping-tcp", "ipi"}
    for m in lat.values():
        assert m["ok"] and m["params"]["interval_us"] == 250 and m["params"]["priority"] == 99
        assert m["metrics"]["ti_irq"]["count"] > 0 and m["metrics"]["ti_sched"]["count"] > 0
        assert any(MOUNT_NOTE in n for n in m["env"]["notes"])
    assert lat["ping-tcp"]["load"]["condition"] == "ping-tcp"
    ipi = lat["ipi"]["load"]                          # the interrupt flood landed on the measured CPUs
    assert ipi["condition"] == "ipi" and ipi["ipis_sent"] > 0
    assert sum(ipi["ipis_received"].values()) > 0.5 * ipi["ipis_sent"], ipi
    cs = {m["condition"]: m for m in run["measurements"] if m["test"] == "preempt"}
    assert set(cs) == {"idle", "ping-tcp", "ipi"}    # the study's context switch
    for m in cs.values():
        assert m["ok"] and m["params"]["event"] == "timer" and m["params"]["period_us"] == 250
    with sqlite3.connect(db) as c:
        assert c.execute("select count(*) from measurements").fetchone()[0] == 7
