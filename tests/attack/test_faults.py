"""Faults the table cannot hold: SIGKILL of `rtgauge run` (the engine and the load die
with it, the run is found abandoned, a --tuned run's tuning is named by doctor and
reverted by the next --tuned run), a load that dies or stops mid-measurement, socket
loads kept off the network. The results database's faults are in test_store_faults.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import needs_root, rtgauge as cli, rtgauge_popen
from readiness import udp_datagrams_in, wait_for

ROOT = Path(__file__).resolve().parents[2]

PROFILE = """name = "fault"
[settings]
warmup_s = 0.2
[[jobs]]
name = "lat"
test = "latency"
conditions = [{conditions}]
[jobs.options]
duration-s = {seconds}
"""


def env(tmp_path: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), RTGAUGE_STATE_DIR=str(tmp_path / "state"),
                XDG_DATA_HOME=str(tmp_path / "xdg"))


def rtgauge(tmp_path, *args, timeout=180) -> subprocess.CompletedProcess:
    return cli(*args, env_full=env(tmp_path), cwd=tmp_path, timeout=timeout)


def popen(tmp_path, *args):
    return rtgauge_popen(*args, env_full=env(tmp_path), cwd=tmp_path)


def children_of(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(name))
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def named_descendants(pid: int, name: bytes) -> list[int]:
    """The descendants of pid whose command line holds name."""
    out = []
    for kid in descendants(pid):
        try:
            if name in Path(f"/proc/{kid}/cmdline").read_bytes():
                out.append(kid)
        except OSError:
            pass
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def engine_pids(pids: list[int]) -> list[int]:
    out = []
    for p in pids:
        try:
            if b"rtgauge-engine" in Path(f"/proc/{p}/cmdline").read_bytes():
                out.append(p)
        except OSError:
            pass
    return out


def statuses(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT status FROM runs ORDER BY id")]
    finally:
        con.close()


@needs_root
@pytest.mark.shared
def test_sigkill_of_run_leaves_no_engine_no_load_and_the_run_is_found_abandoned(tmp_path):
    """The run's work directories go to a TMPDIR of the test's own: any other `rtgauge run`
    on the machine clears the dead run's directories from the shared /tmp as its own first
    step (in .ci/run one did, between the SIGKILL and the look)."""
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(conditions='"cpu"', seconds=60))
    db = tmp_path / "r.db"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    e = dict(env(tmp_path), TMPDIR=str(tmp))
    p = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report", env_full=e, cwd=tmp_path)
    # the measuring engine beside its load (a first, short engine only checks the
    # real-time privilege before the load starts)
    assert wait_until(lambda: engine_pids(descendants(p.pid)) and len(descendants(p.pid)) >= 3, 60), \
        p.stderr.read() if p.poll() else ""
    family = descendants(p.pid)
    assert len(family) >= 3          # the engine, the load's supervisor and stress-ng
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert wait_until(lambda: not any(alive(x) for x in family), 10), [x for x in family if alive(x)]
    assert statuses(db) == ["running"]
    shown = cli("show", "--db", str(db), env_full=e, cwd=tmp_path)
    assert "marked abandoned" in shown.stderr
    assert statuses(db) == ["abandoned"]
    leftovers = [d for d in os.listdir(tmp) if d.startswith(f"rtgauge-job-{p.pid}-")
                 or d.startswith(f"rtgauge-load-{p.pid}-")]
    assert leftovers, "nothing to clean up: the work directories are not named by their owner"
    # the next run clears the dead run's work directories before it starts
    prof.write_text(PROFILE.format(conditions='"idle"', seconds=0.3))
    r = cli("run", "--profile", str(prof), "--db", str(db), "--no-report", env_full=e, cwd=tmp_path, timeout=180)
    assert r.returncode in (0, 1), r.stderr
    assert not any((tmp / d).exists() for d in leftovers)


def governor_files() -> list[str]:
    import glob
    return glob.glob("/sys/kernel/mm/transparent_hugepage/enabled") + glob.glob("/proc/irq/*/smp_affinity_list")


@needs_root
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="tuning moves IRQs: needs two CPUs")
@pytest.mark.shared
def test_sigkill_of_tuned_run_is_named_by_doctor_and_reverted_by_the_next_tuned_run(tmp_path):
    before = {f: Path(f).read_bytes() for f in governor_files() if os.path.exists(f)}
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(conditions='"idle"', seconds=60))
    db = tmp_path / "r.db"
    state = tmp_path / "state" / "tune-state.json"
    p = popen(tmp_path, "run", "--profile", str(prof), "--db", str(db), "--no-report", "--tuned")
    try:
        assert wait_until(state.exists, 60)
        assert wait_until(lambda: engine_pids(descendants(p.pid)), 30)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        doctor = rtgauge(tmp_path, "doctor", "--json")
        [tuning] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "tuning"]
        assert tuning["status"] == "bad" and "no running rtgauge owns this tuning" in tuning["value"]
        assert "rtgauge tune --revert" in tuning["advice"]
        assert "tuning" in rtgauge(tmp_path, "doctor").stdout
        status = rtgauge(tmp_path, "tune", "--status")
        assert "stale" in status.stdout and "tune --revert" in status.stdout
        prof.write_text(PROFILE.format(conditions='"idle"', seconds=0.3))
        r = rtgauge(tmp_path, "run", "--profile", str(prof), "--db", str(db), "--no-report", "--tuned")
        assert "reverted the tuning left by rtgauge pid" in r.stdout, r.stdout + r.stderr
        assert "already tuned" not in r.stdout
        assert not state.exists()
    finally:
        if state.exists():
            rtgauge(tmp_path, "tune", "--revert")
    assert {f: Path(f).read_bytes() for f in before} == before


@needs_root
def test_planted_symlink_for_the_lock_is_refused(tmp_path):
    (tmp_path / "state").mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / "state" / "tune-state.json.lock").symlink_to(victim)
    r = rtgauge(tmp_path, "tune", "--apply")
    assert r.returncode == 2 and "a symlink is refused" in r.stderr, r.stderr
    assert victim.read_text() == "untouched"
    assert not (tmp_path / "state" / "tune-state.json").exists()


@needs_root
@pytest.mark.shared
def test_a_load_that_dies_marks_its_measurement_failed(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(conditions='"command:sleep 1"', seconds=3))
    db = tmp_path / "r.db"
    r = rtgauge(tmp_path, "run", "--profile", str(prof), "--db", str(db), "--no-report")
    assert r.returncode == 1, r.stdout + r.stderr
    shown = json.loads(rtgauge(tmp_path, "show", "latest", "--db", str(db), "--json").stdout)
    [m] = shown["measurements"]
    assert m["ok"] is False and m["load_ok"] is False
    assert "no longer running" in m["load"]["problem"] and "no longer running" in m["error"]
    # the measurement itself is kept
    assert m["metrics"]["ti"]["count"] > 0


@needs_root
@pytest.mark.parametrize("condition", ["net", "irq-heavy", "mixed"])
def test_socket_loads_listen_on_no_interface_of_the_host(condition):
    from rtgauge.loads import make_load
    from rtgauge.loads import session_pids
    load = make_load(condition)
    load.start()
    try:
        host = os.readlink("/proc/self/ns/net")

        def traffic() -> int:
            """UDP datagrams received in the load's own network namespace (a process of its
            session already in another namespace than this one), 0 before it is there."""
            for pid in session_pids(load.proc.pid):
                try:
                    if os.readlink(f"/proc/{pid}/ns/net") != host:
                        return udp_datagrams_in(pid)
                except OSError:
                    continue
            return 0
        # looked at once the traffic runs: its sockets are open then, in its namespace
        wait_for(lambda: traffic() >= 100, "100 UDP datagrams in the load's own network namespace", proc=load.proc)
        pids = session_pids(load.proc.pid)
        assert len(pids) > 2
        ss = subprocess.run(["ss", "-Htanup"], capture_output=True, text=True).stdout
        mine = [line for line in ss.splitlines() if any(f"pid={x}," in line for x in pids)]
    finally:
        delivered = load.stop()
    assert not mine, mine
    assert delivered.get("bogo_ops", 0) > 0          # the traffic ran, in its own namespace


@needs_root
@pytest.mark.shared
def test_a_stopped_load_is_noticed_by_what_it_delivered(tmp_path):
    """SIGSTOP to the cpu load's stress-ng: alive, but it delivers nothing."""
    prof = tmp_path / "p.toml"
    # the check is a floor of 2 % of workers x the measurement's wall time, counted from
    # the end of the warm-up: a long warm-up gives this test, however loaded the machine,
    # the time to stop every worker before the measurement starts (checked below)
    prof.write_text(PROFILE.format(conditions='"cpu"', seconds=8).replace("warmup_s = 0.2", "warmup_s = 4"))
    db = tmp_path / "r.db"
    p = popen(tmp_path, "run", "--profile", str(prof), "--db", str(db), "--no-report")

    def stress() -> list[int]:
        return named_descendants(p.pid, b"stress-ng")

    def engine_started() -> bool:
        return bool(named_descendants(p.pid, b"rtgauge-engine"))
    wait_for(lambda: len(stress()) >= 2, "the cpu load's stress-ng workers", proc=p, poll=0.005)
    for pid in stress():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    assert not engine_started(), "the measurement started before this test stopped the load"
    # every stress-ng process is stopped, one started after the first were seen too, until
    # the run ends
    deadline = time.monotonic() + 180
    while p.poll() is None and time.monotonic() < deadline:
        for pid in stress():
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        time.sleep(0.05)        # how often new workers are looked for and stopped, not a wait for one
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1, out + err
    shown = json.loads(rtgauge(tmp_path, "show", "latest", "--db", str(db), "--json").stdout)
    [m] = shown["measurements"]
    assert m["ok"] is False and m["load_ok"] is False
    assert "CPU-seconds of the" in m["load"]["problem"]


def test_import_of_a_database_leaves_the_source_untouched(tmp_path, engine_bin):
    """Opening a database marks dead runs abandoned (and may upgrade it): import reads a
    copy, so the file given to it is not changed."""
    doc = tmp_path / "lat.json"
    subprocess.run([engine_bin, "latency", "--duration-s", "0.2", "--policy", "other", "--out", str(doc)],
                   check=True, capture_output=True, timeout=60)
    src = tmp_path / "src.db"
    assert rtgauge(tmp_path, "import", str(doc), "--db", str(src)).returncode == 0
    from rtgauge import owner
    dead = dict(owner.me(), pid=2**22 + 1, start_ticks=1)
    con = sqlite3.connect(src)
    con.execute("UPDATE runs SET status = 'running', owner = ?", (json.dumps(dead),))
    con.commit()
    con.close()
    before = src.read_bytes()
    r = rtgauge(tmp_path, "import", str(src), "--db", str(tmp_path / "dst.db"))
    assert r.returncode == 0, r.stderr
    assert src.read_bytes() == before
    # opened as a results database, the dead run is found abandoned
    shown = rtgauge(tmp_path, "show", "--db", str(src))
    assert "marked abandoned" in shown.stderr and statuses(src) == ["abandoned"]
