"""Loads, the doctor's facts and the cross-check on a target (tests/sshlab.py),
against real OpenSSH servers: a cpu load runs on the target (its processes are in
the board's UTS namespace, its CPU seconds are read there) and ends with the run;
Ctrl-C ends it there; a cut link mid-load leaves no load or engine process behind; a condition the
target cannot run is refused with nothing stored; the facts describe the target
where it differs from this machine (a hostname of its own, and a machine-id and
missing tools injected into its mount namespace); cyclictest missing there is a
stored note.

The second board ("bare") differs from this machine in what the test controls:
in a mount namespace of its own, /etc/machine-id is another file and hackbench
and cyclictest are /dev/null (not executable: `command -v` does not find them)."""

from __future__ import annotations

from conftest import cli, rtgauge_popen
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

import sshlab
from readiness import measured, wait_for
from rtgauge.owner import hash_machine_id
from rtgauge.sysinfo import collect_facts
from rtgauge.sysinfo.facts import TRACEFS_PATHS
from test_run_target import REPO, assert_cyclictest_loops, only_run, rtgauge_run
from test_target_ssh import engine_test

pytestmark = [pytest.mark.shared, pytest.mark.skipif(sshlab.available() is not None, reason=sshlab.available() or "")]

BARE_ID = "0123456789abcdef0123456789abcdef"

PROFILE = """\
name = "board-load"
[[jobs]]
name = "latency"
test = "latency"
conditions = [{conditions}]
{cross}
[jobs.options]
duration-s = {duration}
threads = 1
"""


@pytest.fixture(scope="module")
def lab():
    lab = sshlab.start(weighed=False)     # its board runs the loads: at the default weight, as a program
    yield lab
    sshlab.stop(lab)


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    d = tmp_path_factory.mktemp("bare")
    (d / "machine-id").write_text(BARE_ID + "\n")
    lab = sshlab.start(weighed=False,     # its board runs loads too
                       prelude=f"mount --bind {d / 'machine-id'} /etc/machine-id && "
                               "mount --bind /dev/null /usr/bin/hackbench && "
                               "mount --bind /dev/null /usr/bin/cyclictest")
    yield lab
    sshlab.stop(lab)


def client_env(lab) -> dict:
    e = dict(os.environ, HOME=str(lab.home), RTGAUGE_CACHE=os.environ.get("RTGAUGE_CACHE")
             or str(REPO / "build" / "cross"))
    e.pop("SSH_AUTH_SOCK", None)
    return e


def profile(tmp_path, conditions='"cpu"', duration=1.5, cross=False) -> str:
    path = tmp_path / "load.toml"
    path.write_text(PROFILE.format(conditions=conditions, duration=duration,
                                   cross='cross_check = ["cyclictest"]' if cross else ""))
    return str(path)


uts, board_processes, board_dirs = sshlab.uts, sshlab.board_processes, sshlab.board_dirs


def load_dirs(lab) -> set[Path]:
    """The board's directories of a load kept there (its keep.sh beside it)."""
    return {d for d in board_dirs(lab) if (d / "keep.sh").exists()}


def read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def engine_measured(lab, p, cycles: int = 200) -> None:
    """Until the engine on the board has measured CYCLES cycles (its measuring thread's
    times off its CPU, read from /proc: the board's processes are this machine's); fails
    at once when the rtgauge that runs it (P) ends first."""
    wait_for(lambda: any(measured(pid, cycles) for pid in board_processes(lab, "rtgauge-engine")
                         if engine_test(pid) == "latency"),
             f"{cycles} cycles measured by the engine on the board", timeout=120, proc=p)


def test_a_cpu_load_runs_on_the_target_and_ends_with_the_run(lab, tmp_path):
    assert uts(lab.sshd.pid) != uts(os.getpid())
    db = tmp_path / "r.db"
    with sshlab.Watch(lab, "stress-ng") as there:      # what the board runs, sampled every 0.1 s
        p = rtgauge_run(client_env(lab), "--profile", profile(tmp_path, '"idle", "cpu"', duration=1.5, cross=True),
                        "--target", "ssh://board", "--db", str(db))
    seen, dirs = there.seen["stress-ng"], there.dirs
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(seen) >= 3                      # stress-ng and its two workers (two CPUs there), in its namespace
    assert board_processes(lab, "stress-ng") == []           # ended with the run
    run = only_run(db)
    idle, idle_ct, cpu, cpu_ct = run["measurements"]
    assert idle["load"]["condition"] == "idle" and "target" not in idle["load"]
    # the cyclictest cross-check ran there too, the second one under its own cpu load there
    for ct in (idle_ct, cpu_ct):
        assert ct["tool"] == "cyclictest" and ct["ok"] and ct["document"]["env"]["target"] == "ssh://board"
        # cyclictest runs the job's wake-ups (--loops 1500 for 1.5 s at 1 kHz) on every CPU
        assert_cyclictest_loops(ct, 1500)
    assert cpu_ct["load"]["condition"] == "cpu" and cpu_ct["load"]["target"] == "ssh://board"
    assert cpu_ct["load"]["bogo_ops"] > 0
    load = cpu["load"]
    assert cpu["ok"] and load["ok"] and load["target"] == "ssh://board" and load["tool"] == "stress-ng"
    assert load["workers"] == os.cpu_count() and load["alive_until_stop"]
    # CPU-bound workers on a machine shared with other work (and a SCHED_FIFO engine): a
    # twentieth at least. The board is this machine, and its load weighs as a program at the
    # default nice (sshlab.start(weighed=False)) beside the suite's niced passes: beside
    # `stress-ng --cpu 2` as well, it got an eleventh (1.49 CPU-s of 2 workers' 8.3 s)
    assert load["cpu_s"] > load["workers"] * load["wall_s"] / 20, load
    assert load["bogo_ops"] > 0 and load["stressors"]["cpu"]["bogo_ops"] == load["bogo_ops"]
    # what stress-ng says it used agrees with the target's process accounting (ticks, whole run)
    assert load["stress_ng_cpu_s"] == pytest.approx(load["cpu_s"], rel=0.25, abs=0.3)
    assert cpu["document"]["env"]["hostname"] == lab.hostname
    assert len(dirs) >= 6 and not any(d.exists() for d in dirs)   # 4 runs there, 2 loads: removed there


def test_ctrl_c_mid_load_ends_the_load_there(lab, tmp_path):
    db = tmp_path / "r.db"
    p = rtgauge_popen("run", "--no-report", "--profile", profile(tmp_path, '"sched"', duration=300),
                      "--target", "ssh://board", "--db", str(db), env_full=client_env(lab), cwd=REPO)
    try:
        # stopped once the engine there has measured and hackbench has finished a run there
        # (its "Time:" line in the load's log: what hackbench_runs counts)
        engine_measured(lab, p)
        wait_for(lambda: any(b"Time:" in read_or_empty(d / "log") for d in load_dirs(lab)),
                 "a finished hackbench run in the load's log there", timeout=120, proc=p)
        dirs = board_dirs(lab)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)          # a watchdog: the run was to last 300 s
        assert p.returncode == 130, out + err
        # stopped before rtgauge exits: nothing to wait for
        assert board_processes(lab, "hackbench") == board_processes(lab, "rtgauge-engine") == []
        assert not any(d.exists() for d in dirs)
        [m] = only_run(db)["measurements"]
        assert m["interrupted"] and m["load"]["hackbench_runs"] >= 1 and m["load"]["target"] == "ssh://board"
    finally:
        if p.poll() is None:
            p.kill()


def test_a_cut_link_mid_load_leaves_nothing_on_the_target(lab, tmp_path):
    db, dirs = tmp_path / "r.db", set()
    p = rtgauge_popen("run", "--no-report", "--profile", profile(tmp_path, '"cpu"', duration=120),
                      "--target", "ssh://board", "--db", str(db), env_full=client_env(lab), cwd=REPO)
    try:
        wait_for(lambda: board_processes(lab, "stress-ng"), "the load running there", timeout=120, proc=p)
        engine_measured(lab, p)                # cut once the engine there has measured, the load beside it
        dirs = board_dirs(lab)
        assert len(dirs) == 2                  # the engine's and the load's
        kept = {d for d in dirs if (d / "keep.sh").exists()}
        lab.link(up=False)
        cut = time.monotonic()
        out, err = p.communicate(timeout=90)
        # a lost board is a failure (1), not a stop the user asked for (130)
        assert p.returncode == 1, out + err
        assert "rtgauge: lost the connection to ssh://board" in err and "Task was destroyed" not in err
        # the guards there: 5 s of silence, then SIGINT, SIGKILL 5 s later at most
        while (board_processes(lab, "stress-ng") or board_processes(lab, "rtgauge-engine")) \
                and time.monotonic() < cut + 20:
            time.sleep(0.2)                    # a poll bounded by the guards' 20 s; the asserts say what stayed
        assert board_processes(lab, "stress-ng") == [], "the load outlived its connection"
        assert board_processes(lab, "rtgauge-engine") == [], ("the engine outlived its connection", [
            Path(f"/proc/{pid}/status").read_text() for pid in board_processes(lab, "rtgauge-engine")])
        run = only_run(db)
        assert run["status"] == "interrupted"
        [m] = run["measurements"]
        assert m["interrupted"] and not m["ok"]
        assert m["load"]["connection"].startswith("lost during the load") and m["load"]["ok"] is False
        assert kept
        wait_for(lambda: not any(d.exists() for d in kept), "the load's directory removed there by keep.sh",
                 timeout=max(1.0, cut + 20 - time.monotonic()))
        [engine_dir] = dirs - kept         # the engine's stays there, with what it measured
        assert engine_dir.exists(), "the engine's directory was removed"   # its document: test_target_ssh
    finally:
        lab.link(up=True)
        if p.poll() is None:
            p.kill()
        for d in dirs:      # left there by the cut
            shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("conditions, sentence", [
    ('"idle", "sched"', r"^condition sched cannot run on ssh://board: it needs hackbench, which is not "
                        r"installed there; install rt-tests there, or drop the condition\.$"),
    ('"ping-tcp"', r"^condition ping-tcp cannot run on a target: it joins two network namespaces"),
])
def test_a_condition_the_target_cannot_run_is_refused_with_nothing_stored(bare, tmp_path, conditions, sentence):
    db = tmp_path / "r.db"
    p = rtgauge_run(client_env(bare), "--profile", profile(tmp_path, conditions), "--target", "ssh://board",
                    "--db", str(db), timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(sentence, lines[0].removeprefix("rtgauge: ")), p.stderr
    assert not db.exists()
    assert board_processes(bare, "stress-ng") == board_processes(bare, "rtgauge-engine") == []


def test_doctor_facts_come_from_the_target(bare):
    # read here before and after the board's: a setting another test of the pass changes
    # meanwhile (a --tuned run sets THP and IRQ affinities for its seconds) reads as
    # either, and the board's reading, taken between, must be one of them
    earlier = collect_facts()
    p = cli(["doctor", "--json", "--target", "ssh://board"], env=client_env(bare), cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout)["facts"]
    here = collect_facts()
    # where the target differs: its UTS namespace, and what its mount namespace shows
    assert facts["hostname"] == bare.hostname != here["hostname"]
    assert facts["machine_id"] == hash_machine_id(BARE_ID) != here["machine_id"]
    assert here["tools"]["hackbench"] and facts["tools"]["hackbench"] is None
    # and what its mount namespace mounts (`ip netns exec` mounts a /sys of its own there)
    mounts = [line.split()[1:3] for line in Path(f"/proc/{bare.sshd.pid}/mounts").read_text().splitlines()]
    assert facts["tracefs_mounted"] == any([p, "tracefs"] in mounts for p in TRACEFS_PATHS)
    assert facts["cgroup_v2"] == (["/sys/fs/cgroup", "cgroup2"] in mounts)
    assert (facts["tracefs_mounted"], facts["cgroup_mode"]) != (here["tracefs_mounted"], here["cgroup_mode"])
    assert facts["tools"]["stress-ng"] == here["tools"]["stress-ng"]
    # where it is this machine (one kernel), the same readers read the same
    for key in ("kernel_release", "kernel_version", "cpus", "cpus_list", "preempt_model", "clocksource",
                "rt_runtime_us", "thp", "governors", "euid", "smt"):
        assert facts[key] in (earlier[key], here[key]), key
    # the same files say the same; only here does systemd-detect-virt add its word
    local = {k: v for k, v in here["virtualization"].items() if k != "detect_virt"}
    local["evidence"] = [x for x in local["evidence"] if not x.startswith("systemd-detect-virt")]
    assert {k: v for k, v in facts["virtualization"].items() if k != "detect_virt"} == local
    assert facts["target"] == "ssh://board" and "read over the connection" in facts["facts_from"]


def test_a_target_run_stores_the_targets_doctor_and_a_missing_cross_check(bare, tmp_path):
    db = tmp_path / "r.db"
    p = rtgauge_run(client_env(bare), "--profile", profile(tmp_path, '"idle"', duration=0.3, cross=True),
                    "--target", "ssh://board", "--db", str(db))
    assert p.returncode == 0, p.stdout + p.stderr
    run = only_run(db)
    assert run["system"]["hostname"] == bare.hostname
    assert run["system"]["tools"]["cyclictest"] is None
    names = {c["name"] for c in run["doctor"]}
    assert {"target", "privileges", "rt_throttling"} <= names, names
    [m] = run["measurements"]
    [note] = m["document"]["env"]["notes"]
    assert note == "ssh://board has no cyclictest (rt-tests): the cyclictest cross-check was not run there"
