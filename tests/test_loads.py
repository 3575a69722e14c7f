"""Load conditions: each really loads the machine (CPU time of its processes, its own
counters) and is gone afterwards (no process of its session or started for it, no
network namespace), also when the job fails, when rtgauge gets SIGTERM and when it
is killed outright."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import needs_root
from readiness import child_named, measured, wait_for
from rtgauge.errors import UserError
from rtgauge.loads import LoadContext, make_load, session_pids
from rtgauge.store import open_store

pytestmark = pytest.mark.alone

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("stress-ng", "hackbench", "udpflood.py", "supervise.py")


def load_processes(parent_pid: int) -> list[int]:
    """Processes started for the loads of rtgauge process `parent_pid`: every load
    process inherits RTGAUGE_PARENT_PID from its supervisor."""
    tag = f"RTGAUGE_PARENT_PID={parent_pid}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{name}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        if tag in env:
            found.append(int(name))
    return found


def named_processes() -> set[int]:
    out = set()
    for n in NAMES:
        p = subprocess.run(["pgrep", "-f", n], capture_output=True, text=True)
        out |= {int(x) for x in p.stdout.split()}
    return out


def net_namespaces() -> set[str]:
    seen = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                seen.add(os.readlink(f"/proc/{name}/ns/net"))
            except OSError:
                pass
    return seen


def wait_until(predicate, timeout=10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def job_engine(pid: int) -> bool:
    """Whether engine PID runs the job's latency test (its first argument)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:2] == [b"latency"]
    except OSError:
        return False


def read_or_empty(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def rtgauge(*args, timeout=300, fresh=False):
    """fresh: as on a machine where tracefs is not mounted (conftest.without_tracefs)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "rtgauge", *args]
    if fresh:
        from conftest import without_tracefs
        cmd = without_tracefs(cmd)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    from conftest import rtgauge as cli
    return cli(*args, env_full=env, cwd=ROOT, timeout=timeout)


def rtgauge_popen(*args):
    from conftest import rtgauge_popen as popen
    return popen(*args, env_full=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)


# what each condition must show beside CPU time: its own counter of work done
OWN_COUNTER = {
    "cpu": "bogo_ops", "memory": "bogo_ops", "io": "bogo_ops", "net": "bogo_ops",
    "irq-heavy": "bogo_ops", "mixed": "bogo_ops", "sched": "hackbench_runs", "ipi": "ipis_sent",
}
NEEDS = {"sched": "hackbench", "ipi": "python3"}


@needs_root
@pytest.mark.parametrize("condition", list(OWN_COUNTER) + ["netns", "command"])
def test_condition_loads_the_machine_and_leaves_nothing(condition, tmp_path):
    tool = NEEDS.get(condition, "stress-ng")
    if condition in ("netns",):
        tool = "ip"
    if condition == "command":
        tool = "sh"
    if not shutil.which(tool):
        pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    name = {"netns": "net", "command": "command:while :; do :; done"}.get(condition, condition)
    ctx = LoadContext(data_dir=str(tmp_path), allow_netns=condition == "netns")
    namespaces_before = net_namespaces()
    load = make_load(name, ctx)
    seconds = 1.5
    load.start()
    try:
        sid = load.proc.pid
        assert session_pids(sid), "the load has no process"
        if condition == "io":
            wait_for(lambda: any(tmp_path.iterdir()), "the io load writing into the data directory", proc=load.proc)
        if condition == "netns":
            wait_for(lambda: len(net_namespaces() - namespaces_before) >= 2, "the netns load's two namespaces",
                     proc=load.proc)
        if condition == "sched":           # its counter: a hackbench run finished ("Time:" in its log)
            wait_for(lambda: "Time:" in read_or_empty(load.workdir / "log.txt"), "a finished hackbench run",
                     proc=load.proc)
        # the load's running time, over which its CPU share is the subject (a third of
        # one CPU at least), not a wait for it to start: that is above
        time.sleep(seconds)
    finally:
        delivered = load.stop()
    assert delivered["condition"] == name and delivered["alive_until_stop"]
    # the load used a real share of the machine while it ran (it is SCHED_OTHER beside a busy test
    # machine, so a third of one CPU is the floor, well below what it takes on a quiet one)
    assert delivered["cpu_s"] > 0.33 * seconds, delivered
    if condition in OWN_COUNTER:
        assert delivered[OWN_COUNTER[condition]] > 0, delivered
    if condition == "netns":
        assert delivered["recv_packets"] > 1000 and delivered["send_packets"] >= delivered["recv_packets"]
        assert len(delivered["namespaces"]) == 2
    if condition == "io":
        assert delivered["directory"] == str(tmp_path)
    assert not session_pids(sid), "a process of the load's session is left"
    assert not load_processes(os.getpid()), "a process started for the load is left"
    if condition == "netns":
        assert wait_until(lambda: not (net_namespaces() - namespaces_before) & set(delivered["namespaces"]), 5), \
            "a network namespace of the load is left"


def test_missing_tool_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    for condition, package in (("cpu", "stress-ng"), ("sched", "rt-tests")):
        with pytest.raises(UserError) as e:
            make_load(condition).check()
        assert f"apt-get install {package}" in str(e.value)
    with pytest.raises(UserError, match="iproute2|util-linux"):
        make_load("net", LoadContext(allow_netns=True)).check()


def test_unknown_and_empty_conditions_are_refused():
    with pytest.raises(UserError, match="unknown load condition 'bogus'"):
        make_load("bogus")
    with pytest.raises(UserError, match="needs a shell command"):
        make_load("command:  ")


def test_profile_accepts_every_condition_and_commands():
    from rtgauge.profiles import parse_profile
    text = """
[[jobs]]
name = "l"
test = "latency"
conditions = ["idle", "cpu", "memory", "io", "net", "sched", "irq-heavy", "mixed", "command:sleep 5"]
"""
    assert parse_profile(text, "t").jobs[0].conditions[-1] == "command:sleep 5"


def test_a_load_that_dies_at_once_is_a_clear_error():
    with pytest.raises(UserError, match="exited at once"):
        make_load("command:exit 3").start()
    assert not load_processes(os.getpid())


@needs_root
def test_load_is_stopped_when_the_job_fails(tmp_path):
    """An engine job that fails (bad option at run time) still stops its load."""
    from rtgauge.plan import Job
    from rtgauge.plan.execute import RunSettings, StopFlag, run_job_segments

    job = Job("bad@cpu", "engine", "latency", "cpu", {"interval-us": 10}, [0], False, 1.0)
    segs = list(run_job_segments(job, RunSettings(warmup_s=0.3), StopFlag()))
    assert len(segs) == 1 and not segs[0].doc["ok"] and segs[0].status == 2
    assert segs[0].delivered["cpu_s"] > 0          # it had been running
    assert not load_processes(os.getpid())


PROFILE = """
name = "loads"
[settings]
warmup_s = 0.3
[[jobs]]
name = "latency"
test = "latency"
conditions = [{conditions}]
[jobs.options]
interval-us = 1000
duration-s = {seconds}
priority = 80
"""


@needs_root
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_rtgauge_stopped_mid_run_leaves_no_load(how, tmp_path):
    if not shutil.which("hackbench"):
        pytest.skip("hackbench is not installed (apt-get install rt-tests)")
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(conditions='"sched", "mixed"', seconds=20))
    db = tmp_path / "r.db"
    before_named = named_processes()
    p = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report")
    try:
        assert wait_until(lambda: len(load_processes(p.pid)) >= 3, 60), "the load did not start"
        # stopped mid-measurement: once its engine (rtgauge's child) has measured
        # (its latency test: the privilege check's short `overhead` before it is not the job)
        wait_for(lambda: (lambda e: e and job_engine(e) and measured(e, 200))(child_named(p.pid, "rtgauge-engine")),
                 "200 cycles measured by the run's engine", timeout=120, proc=p)
        os.kill(p.pid, getattr(signal, how))
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert wait_until(lambda: not load_processes(p.pid), 10), "load processes outlived rtgauge"
    # by name too: nothing new named like a load part is left (others' tests may start theirs, so
    # only processes of rtgauge's own loads count, found by their inherited tag above)
    left = [pid for pid in named_processes() - before_named if pid in load_processes(p.pid)]
    assert not left
    if how == "SIGTERM":
        assert p.returncode == 130
        with open_store(str(db)) as store:
            run = store.get_run(store.latest_run_id()).to_dict()
        assert run["status"] == "interrupted"
        (m,) = run["measurements"]
        assert m["interrupted"] and m["condition"] == "sched" and m["load"]["cpu_s"] > 0
