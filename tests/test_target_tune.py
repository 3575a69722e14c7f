"""`run --tuned --target ssh://...` against a real OpenSSH server (tests/sshlab.py):
the tuning is applied on the target for the run (seen in the target's files while
the engine runs) and reverted byte for byte after it, when the link is cut, and,
when its keeper there was killed (which `doctor --target` then reports), by the
next run there.

The board shares this machine's kernel, so its /sys and /proc/irq are this
machine's: the test reads them here, and compares them byte for byte."""

from __future__ import annotations

from conftest import cli, rtgauge_popen
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import sshlab
from test_run_target import REPO, only_run, rtgauge_run
from readiness import wait_for
from test_target_loads import board_dirs, board_processes, client_env, engine_measured, profile

pytestmark = [pytest.mark.alone, pytest.mark.skipif(sshlab.available() is not None, reason=sshlab.available() or "")]

THP = "/sys/kernel/mm/transparent_hugepage/enabled"
STATE = Path("/run/rtgauge/target-tune")


def tunable() -> dict[str, bytes]:
    """The files the tuning may change, byte for byte."""
    out = {}
    for p in [THP, "/sys/kernel/mm/transparent_hugepage/defrag", "/proc/irq/default_smp_affinity",
              *map(str, Path("/proc/irq").glob("[0-9]*/smp_affinity_list")),
              *map(str, Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))]:
        try:
            out[p] = Path(p).read_bytes()
        except OSError:
            pass
    return out


def changed_paths() -> set[str]:
    """The files the tuning there changes, from the revert script it keeps there."""
    try:
        return set(re.findall(r"printf %s \S+ > (\S+);", (STATE / "revert.sh").read_text()))
    except OSError:
        return set()


def assert_put_back(before: dict[str, bytes], ours: set[str]) -> None:
    """Every file the tuning changed reads as before, byte for byte. The machine is
    shared: a file it did not change that changed anyway was changed by someone else
    (another tuning of this machine running at the same time), and the test cannot
    tell their writes from its own."""
    after = tunable()
    assert ours and THP in ours
    others = sorted(p for p in before if after.get(p) != before[p] and p not in ours)
    if others:
        pytest.skip(f"{', '.join(others[:3])} changed during the test, not by it: another tuning of this "
                    "machine ran at the same time")
    assert {p: after.get(p) for p in ours} == {p: before.get(p) for p in ours}


@pytest.fixture(scope="module")
def lab():
    if not Path(THP).exists():
        pytest.skip("no transparent hugepages here: nothing the test can see tuned")
    if STATE.exists():
        pytest.skip(f"{STATE} is there: a tuning of this machine as a target is in place")
    lab = sshlab.start()
    try:
        yield lab
    finally:
        try:
            # a test that failed half-way may leave its keeper there reverting (the board is
            # this machine): let it end before stopping the board kills it, then revert
            # what is left, so that no failure leaves this machine tuned
            wait_for(lambda: not STATE.exists(), "the tuning there reverted", timeout=20)
        except AssertionError:
            subprocess.run(["sh", str(STATE / "revert.sh")], capture_output=True, timeout=60)
        finally:
            sshlab.stop(lab)


@pytest.fixture
def thp_not_never():
    """The test sees the tuning by THP going to never: start from another value."""
    before = Path(THP).read_bytes()
    if b"[never]" in before:
        Path(THP).write_text("madvise")
    yield
    Path(THP).write_bytes(before.split(b"[")[1].split(b"]")[0])


def watch_thp(done: threading.Event, seen: list[bytes], ours: set[str]) -> threading.Thread:
    def run():
        while not done.is_set():
            seen.append(Path(THP).read_bytes())
            ours.update(changed_paths())
            done.wait(0.05)            # the sampling period, ended at once when the run is over
    t = threading.Thread(target=run)
    t.start()
    return t


def test_tuning_is_applied_there_and_reverted_byte_for_byte(lab, tmp_path, thp_not_never):
    before = tunable()
    seen: list[bytes] = []
    ours: set[str] = set()
    done = threading.Event()
    watcher = watch_thp(done, seen, ours)
    try:
        db = tmp_path / "r.db"
        p = rtgauge_run(client_env(lab), "--profile", profile(tmp_path, '"idle"', duration=1.5),
                        "--target", "ssh://board", "--tuned", "--db", str(db))
    finally:
        done.set()
        watcher.join()
    assert p.returncode == 0, p.stdout + p.stderr
    assert any(b"[never]" in s for s in seen)                 # tuned while the run measured
    assert not STATE.exists()
    assert_put_back(before, ours)                              # and put back, byte for byte
    [m] = only_run(db)["measurements"]
    tuned = m["load"]["tuned"]
    assert tuned["target"] == "ssh://board"
    assert [THP, before[THP].decode().strip(), "never"] in tuned["changed"]
    assert {c[0] for c in tuned["changed"]} <= ours
    assert f"tuned ssh://board: {len(tuned['changed'])} setting(s) changed" in p.stdout
    assert "tuning of ssh://board reverted" in p.stdout


def test_a_cut_link_reverts_the_tuning_there(lab, tmp_path, thp_not_never):
    before, dirs = tunable(), set()
    p = rtgauge_popen("run", "--no-report", "--tuned", "--profile",
                      profile(tmp_path, '"idle"', duration=120), "--target", "ssh://board",
                      "--db", str(tmp_path / "r.db"), env_full=client_env(lab), cwd=REPO)
    try:
        engine_measured(lab, p)                 # the tuning is applied before the engine starts
        assert b"[never]" in Path(THP).read_bytes()
        ours = changed_paths()
        dirs = board_dirs(lab)
        assert len(dirs) == 2                  # the engine's and the tuning keeper's
        keeper_dirs = {d for d in dirs if (d / "keep.sh").exists()}
        lab.link(up=False)
        cut = time.monotonic()
        # revert.sh removes the state file when all read back
        wait_for(lambda: not STATE.exists(), "the keeper there reverting the tuning once the link was cut",
                 timeout=max(1.0, cut + 20 - time.monotonic()))
        assert_put_back(before, ours)
        assert keeper_dirs
        wait_for(lambda: not any(d.exists() for d in keeper_dirs), "the keeper's directory removed there by keep.sh",
                 timeout=max(1.0, cut + 20 - time.monotonic()))
        out, err = p.communicate(timeout=60)
        # a lost board is a failure (1), not a stop the user asked for (130)
        assert p.returncode == 1, out + err
        assert "rtgauge: lost the connection to ssh://board" in err and "Task was destroyed" not in err
        assert "reverts the tuning by itself" in out
    finally:
        lab.link(up=True)
        if p.poll() is None:
            p.kill()
        for d in dirs:      # the engine's, left there by the cut
            shutil.rmtree(d, ignore_errors=True)


def test_a_tuning_left_there_is_reverted_by_the_next_run(lab, tmp_path, thp_not_never):
    before, dirs = tunable(), set()
    p = rtgauge_popen("run", "--no-report", "--tuned", "--profile",
                      profile(tmp_path, '"idle"', duration=120), "--target", "ssh://board",
                      "--db", str(tmp_path / "r.db"), env_full=client_env(lab), cwd=REPO)
    try:
        wait_for(lambda: board_processes(lab, "rtgauge-engine"), "the engine running there", timeout=120, proc=p)
        # the keeper there dies without a word (as with its session killed), then rtgauge
        def named(name: str, word: bytes) -> list[int]:
            found = []
            for pid in board_processes(lab, name):
                try:
                    if word in Path(f"/proc/{pid}/cmdline").read_bytes():
                        found.append(pid)
                except OSError:        # another process of that name there, ended since it was listed
                    pass
            return found
        keepers, holders = named("sh", b"keep.sh"), named("sleep", b"86400000")
        dirs = board_dirs(lab)
        assert keepers and holders
        for pid in keepers:      # keep.sh first: it must not see its holder end
            os.kill(pid, signal.SIGKILL)
        for pid in holders:
            os.kill(pid, signal.SIGKILL)
        p.kill()
        p.wait()
        # once the killed keepers and holders are gone, reaped too (`kill -0` there, as
        # doctor and the next run ask, finds a zombie alive), nothing is left there that
        # could revert the tuning (keep.sh runs revert.sh, and it was killed): look then
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in keepers + holders),
                 "the killed keeper and its holder gone from the board, reaped", timeout=60)
        assert STATE.exists() and b"[never]" in Path(THP).read_bytes()     # left tuned
        ours = changed_paths()
    finally:
        if p.poll() is None:
            p.kill()
        for d in dirs:     # the killed keeper's and the engine's
            shutil.rmtree(d, ignore_errors=True)
    d = cli(["doctor", "--json", "--target", "ssh://board"], env=client_env(lab), cwd=REPO, timeout=120)
    [check] = [c for c in json.loads(d.stdout)["checks"] if c["name"] == "tuning"]
    assert check["status"] == "bad" and "whose keeper is gone" in check["value"], check
    q = rtgauge_run(client_env(lab), "--profile", profile(tmp_path, '"idle"', duration=0.3),
                    "--target", "ssh://board", "--tuned", "--db", str(tmp_path / "r2.db"))
    assert q.returncode == 0, q.stdout + q.stderr
    assert "reverted the tuning left on ssh://board by a run that ended without reverting it" in q.stdout
    assert not STATE.exists()
    assert_put_back(before, ours)
