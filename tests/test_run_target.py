"""`rtgauge run --target ssh://...` against a real OpenSSH server in a network
namespace (tests/sshlab.py): a small profile measured there is stored here with
the target's identity; an unreachable, unauthenticated or unprivileged target,
and a load that can never run there, are refused before anything is stored; Ctrl-C
and a cut link leave no engine on the target and keep what was measured."""

from __future__ import annotations

from conftest import cli, rtgauge_popen
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

import sshlab
from rtgauge.store import open_store
from rtgauge.sysinfo import collect_facts
from readiness import wait_for
from test_target_ssh import engine_processes, wait_until_measuring

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.shared, pytest.mark.skipif(sshlab.available() is not None, reason=sshlab.available() or "")]

PROFILE = """\
name = "board-small"
{target}
[[jobs]]
name = "latency"
test = "latency"
conditions = [{conditions}]
cross_check = ["cyclictest"]
[jobs.options]
duration-s = {duration}
threads = 1
"""


@pytest.fixture(scope="module")
def lab():
    lab = sshlab.start()
    yield lab
    sshlab.stop(lab)


@pytest.fixture
def env(lab):
    """The client side: the lab's HOME (its ~/.ssh), no agent of the developer's."""
    e = dict(os.environ, HOME=str(lab.home), RTGAUGE_CACHE=os.environ.get("RTGAUGE_CACHE")
             or str(REPO / "build" / "cross"))
    e.pop("SSH_AUTH_SOCK", None)
    return e


def profile(tmp_path, target="", conditions='"idle"', duration=0.5) -> str:
    path = tmp_path / "board.toml"
    path.write_text(PROFILE.format(target=f'target = "{target}"' if target else "", conditions=conditions,
                                   duration=duration))
    return str(path)


def rtgauge_run(env, *args, **kw):
    return cli(["run", "--no-report", *args], env=env, cwd=REPO, timeout=kw.pop("timeout", 300), **kw)


def assert_cyclictest_loops(ct: dict, loops: int) -> None:
    """cyclictest --loops N on every CPU: it ends when its first thread has woken N times
    (rt-tests' main loop stops them all then), so that thread has N and a thread that
    lost periods on a loaded machine (a wake-up later than its next period skips it)
    has fewer, never more."""
    per_thread = [v["value"] for k, v in ct["metrics"].items() if k.startswith("cycles#")]
    assert len(per_thread) == os.cpu_count() and max(per_thread) == loops and min(per_thread) > 0, per_thread
    assert ct["metrics"]["cycles"]["value"] == sum(per_thread)


def only_run(db: Path) -> dict:
    with open_store(str(db)) as store:
        [row] = store.list_runs()
        return store.get_run(row["id"]).to_dict()


def test_a_profile_with_a_target_is_measured_there_and_stored_here(lab, env, tmp_path):
    db = tmp_path / "r.db"
    with sshlab.Watch(lab) as there:
        p = rtgauge_run(env, "--profile", profile(tmp_path, target="ssh://board"), "--db", str(db))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cross-check is skipped" not in " ".join(p.stdout.split())   # the board has cyclictest: it ran there
    run = only_run(db)
    assert run["status"] == "complete"
    system = run["system"]
    assert system["hostname"] == lab.hostname != os.uname().nodename
    assert system["target"] == "ssh://board"
    assert system["arch"] == os.uname().machine and system["kernel_release"] == os.uname().release
    assert run["hostname"] == lab.hostname                     # the system the run is filed under
    m, ct = run["measurements"]
    assert ct["tool"] == "cyclictest" and ct["ok"], ct["document"].get("error")
    assert ct["document"]["env"]["target"] == "ssh://board"
    assert_cyclictest_loops(ct, 500)                  # --loops: 0.5 s at 1 kHz, on every CPU
    doc = m["document"]
    assert m["ok"] and not m["interrupted"]
    assert doc["env"]["hostname"] == lab.hostname               # the engine ran there
    assert doc["env"]["target"] == "ssh://board"
    assert m["metrics"]["cycles"]["value"] + m["metrics"]["skipped"]["value"] == pytest.approx(500, abs=2)
    # the board shares /tmp: its directories (the engine's, cyclictest's) are gone
    assert len(there.dirs) >= 2 and not any(d.exists() for d in there.dirs)


def test_a_target_without_the_tool_is_told_apart(lab, env, monkeypatch):
    from rtgauge.remote.session import TargetSession
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("RTGAUGE_CACHE", env["RTGAUGE_CACHE"])     # else the lab's empty ~/.cache: a build
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    with TargetSession("ssh://board") as t:
        assert t.has("cyclictest") and not t.has("rtgauge-no-such-tool")
        facts = t.facts()
    here = collect_facts()
    assert facts["hostname"] == lab.hostname
    # the board is this kernel: the doctor's reader, fed the target's files, agrees with it here
    assert facts["preempt_model"] == here["preempt_model"] and facts["cpus"] == here["cpus"]
    assert facts["machine_id"] == here["machine_id"] and facts["kernel_version"] == here["kernel_version"]


def test_target_option_wins_over_the_profile(lab, env, tmp_path):
    db = tmp_path / "r.db"
    p = rtgauge_run(env, "--profile", profile(tmp_path, target="ssh://board-closed", duration=0.2),
                    "--target", "ssh://board", "--db", str(db))
    assert p.returncode == 0, p.stdout + p.stderr
    assert only_run(db)["system"]["hostname"] == lab.hostname
    p = rtgauge_run(env, "--profile", profile(tmp_path, target="ssh://board"), "--target", "local",
                    "--db", str(tmp_path / "here.db"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert only_run(tmp_path / "here.db")["system"]["hostname"] == os.uname().nodename


@pytest.mark.parametrize("target, conditions, sentence", [
    ("ssh://board-closed", '"idle"', r"cannot reach ssh://board-closed \(.*\); check the address"),
    ("ssh://board-stranger", '"idle"', r"ssh://board-stranger refused the login; give it your public key"),
    ("ssh://board-user", '"idle"', r"is not root and may not use real-time priorities \(rtprio limit 0\)"),
    ("ssh://board", '"idle", "ping-tcp"', r"^rtgauge: condition ping-tcp cannot run on a target: it joins two "
                                          r"network namespaces"),
])
def test_refusals_store_nothing(lab, env, tmp_path, target, conditions, sentence):
    import re
    db = tmp_path / "r.db"
    p = rtgauge_run(env, "--profile", profile(tmp_path, conditions=conditions), "--target", target,
                    "--db", str(db), timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(sentence, lines[0]) and "Traceback" not in p.stderr, p.stderr
    assert not db.exists()


def test_rt_throttling_off_on_a_target_is_refused(lab, env, tmp_path):
    p = rtgauge_run(env, "--profile", profile(tmp_path), "--target", "ssh://board", "--tuned",
                    "--rt-throttling-off", "--db", str(tmp_path / "r.db"))
    assert p.returncode == 2 and "--rt-throttling-off cannot run on ssh://board yet" in p.stderr
    assert not (tmp_path / "r.db").exists()


def wait_for_remote_engine(lab, p, timeout=120) -> list[Path]:
    """The board's directories with an engine running in them, once there is one."""
    return wait_for(lambda: sorted(sshlab.engine_dirs(lab)), "the engine started on the target", timeout=timeout,
                    proc=p)


def test_ctrl_c_stops_the_remote_engine_and_keeps_what_it_measured(lab, env, tmp_path):
    db = tmp_path / "r.db"
    p = rtgauge_popen("run", "--no-report", "--profile", profile(tmp_path, duration=300), "--target",
                      "ssh://board", "--db", str(db), env_full=env, cwd=REPO)
    dirs = wait_for_remote_engine(lab, p)
    wait_until_measuring(dirs, proc=p)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)          # a watchdog: the run was to last 300 s
    assert p.returncode == 130, out + err
    assert all(engine_processes(str(d)) == [] and not d.exists() for d in dirs)
    run = only_run(db)
    assert run["status"] == "interrupted"
    [m] = run["measurements"]
    assert m["interrupted"] and m["document"]["env"]["hostname"] == lab.hostname
    # what it measured before the stop was kept (how many cycles that is depends on how
    # busy the machine was: the cycles, not their number, are the claim)
    assert m["metrics"]["cycles"]["value"] > 0
    assert m["metrics"]["ti"]["count"] == m["metrics"]["cycles"]["value"]


# the two ways a cut link shows: the keep-alive notices, or the session ends without a status
LOST = re.compile(r"lost the connection to ssh://board|the session of `\w+` on ssh://board ended without an exit "
                  r"status \(the connection or sshd there went away\)")


def test_a_cut_link_fails_the_run_keeps_it_interrupted_and_the_engine_ends_itself(lab, env, tmp_path):
    """A lost board is a failure (exit 1, the reason said), not a stop the user asked for
    (130): a CI job must not read a dead board as a Ctrl-C."""
    db, directory = tmp_path / "r.db", None
    p = rtgauge_popen("run", "--no-report", "--profile", profile(tmp_path, duration=120), "--target",
                      "ssh://board", "--db", str(db), env_full=env, cwd=REPO)
    try:
        [directory] = wait_for_remote_engine(lab, p)
        wait_until_measuring([directory], proc=p)      # cut once it has measured
        lab.link(up=False)
        cut = time.monotonic()
        out, err = p.communicate(timeout=60)
        assert p.returncode == 1, out + err
        assert LOST.search(err) and "Traceback" not in err
        assert "kept in the store as run 1 (marked interrupted)" in " ".join(out.split())   # however folded
        wait_for(lambda: not engine_processes(str(directory)), "the engine there ending once its connection was "
                 "cut (it outlived it)", timeout=max(1.0, cut + 15 - time.monotonic()))
        run = only_run(db)
        assert run["status"] == "interrupted"
        [m] = run["measurements"]
        assert m["interrupted"] and LOST.search(m["document"]["error"])
    finally:
        lab.link(up=True)
        if p.poll() is None:
            p.kill()
        if directory is not None:                # left on the target: the connection was gone
            shutil.rmtree(directory, ignore_errors=True)


def test_the_profile_target_key():
    from rtgauge.errors import UserError
    from rtgauge.profiles import parse_profile
    job = '[[jobs]]\nname = "l"\ntest = "latency"\nconditions = ["idle"]\n'
    assert parse_profile('target = "ssh://root@board:2200"\n' + job, "t").target == "ssh://root@board:2200"
    assert parse_profile('target = "local"\n' + job, "t").target is None
    assert parse_profile(job, "t").target is None
    with pytest.raises(UserError, match=r"^profile t: target 'board' is not an SSH address"):
        parse_profile('target = "board"\n' + job, "t")
    with pytest.raises(UserError, match=r"^profile t: target must be text"):
        parse_profile('target = 3\n' + job, "t")
