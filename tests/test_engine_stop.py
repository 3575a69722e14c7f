"""Every engine loop honours a stop at once, whatever its payload, and the engine
ends itself when its parent dies. Each test is an attack that used to leave a
real-time process behind: it runs the real engine, stops it the way a user or a
dying orchestrator would, and checks it is gone long before the loop would have
ended by itself. The speed of a stop (the rule: within one period or 100 ms) is
a target in bench/stop.py, not here: a test must not assume the machine's speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import needs_root
from readiness import most, start_udp_server, threads_of, udp_ports, wait_for

QUIET = ("--policy", "other", "--no-mlock")
# A watchdog, not a speed: from the stop to the process's exit on a machine however
# loaded. Every loop below would run on for 30 s or more if it ignored the stop.
STOP_S = 10.0


def start(engine_bin, *args):
    return subprocess.Popen([engine_bin, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_and_time(p: subprocess.Popen, ready, what: str, sig=signal.SIGTERM):
    """Send sig once ready() holds (WHAT: what it waits for, on the process itself); the
    seconds until the process exited and its document."""
    wait_for(ready, what, proc=p)
    assert p.poll() is None, "the engine ended before it was stopped: " + p.stderr.read()
    t0 = time.monotonic()
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"the engine was still running 15 s after {sig.name}")
    return time.monotonic() - t0, json.loads(out), err


def set_up(p: subprocess.Popen):
    """The engine's threads exist (its observer or measuring threads): its stop handlers
    were installed before them, so a signal now is a stop, not the default death."""
    return lambda: threads_of(p.pid) >= 2


def test_sigterm_during_the_start_delay_ends_latency_at_once(engine_bin):
    p = start(engine_bin, "latency", "--start-delay-ms", "60000", "--duration-s", "1", *QUIET)
    took, doc, _ = stop_and_time(p, set_up(p), "engine threads (set up, in its 60 s start delay)")
    assert took < STOP_S
    assert p.returncode == 130 and doc["interrupted"] is True
    assert doc["metrics"]["cycles"]["value"] == 0


def test_sigterm_before_a_far_start_at_ends_latency_at_once(engine_bin):
    start_at = time.monotonic_ns() + 3600 * 10**9   # an hour ahead: valid, and long
    p = start(engine_bin, "latency", "--start-at-ns", str(start_at), "--duration-s", "1", *QUIET)
    took, doc, _ = stop_and_time(p, set_up(p), "engine threads (set up, waiting for a start an hour ahead)")
    assert took < STOP_S and p.returncode == 130 and doc["interrupted"] is True


@pytest.mark.parametrize("test", ["latency", "spin"])
def test_start_at_more_than_a_day_ahead_is_a_usage_error(run_engine, test):
    r = run_engine(test, "--start-at-ns", "9200000000000000000", *QUIET, timeout=10)
    assert r.status == 2 and r.doc["ok"] is False
    assert "more than a day in the future" in r.doc["error"]
    assert r.stderr.count("\n") == 1


def test_sigterm_within_a_long_latency_period(engine_bin):
    """One wake-up a second, deadlines on a grid known from --start-at-ns: the stop,
    sent between two deadlines, must not wait for the next one. Ground truth without
    a clock race: the cycles kept are the deadlines due before the signal (one fewer
    when the engine had not yet woken for the last of them); a loop that slept on to
    the next deadline would keep one more."""
    period = 10**9
    first = time.monotonic_ns() + 500_000_000
    p = start(engine_bin, "latency", "--interval-us", "1000000", "--duration-s", "60", "--threads", "1",
              "--start-at-ns", str(first), *QUIET)
    wait_for(set_up(p), "engine threads (its stop handlers installed)", proc=p)
    # the middle of the first gap after the second deadline still ahead: the instant is
    # the test's subject (a stop between two deadlines), not a wait for the engine
    k = max(1, -(-(time.monotonic_ns() + 50_000_000 - first - period // 2) // period))
    time.sleep(max(0.0, (first + k * period + period // 2 - time.monotonic_ns()) / 1e9))
    assert p.poll() is None, p.stderr.read()
    sent = time.monotonic_ns()
    p.send_signal(signal.SIGTERM)
    try:
        out, _ = p.communicate(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"the engine was still running {STOP_S} s after SIGTERM")
    doc = json.loads(out)
    due = (sent - first) // period + 1          # deadlines first, first + 1 s, ... before the signal
    assert doc["interrupted"] is True
    assert due - 1 <= doc["metrics"]["cycles"]["value"] + doc["metrics"]["skipped"]["value"] <= due


def test_sigterm_within_a_long_spin_period(engine_bin):
    # a 100 ms burst every 10 s, stopped once the first burst runs: the spinning thread
    # (on CPU 0 alone) has used 5 ms of CPU, where its set-up takes ~0.2 ms (a burst is
    # wall time: beside other work it gets a share of the CPU, not all). A loop that
    # waited for its next period would take 10 s more (and burst a second time)
    p = start(engine_bin, "spin", "--cpu", "0", "--period-us", "10000000", "--busy-us", "100000",
              "--duration-s", "60", *QUIET)
    took, doc, _ = stop_and_time(p, lambda: most(p.pid, "cpu_ns", cpu=0) >= 5_000_000, "first burst under way")
    assert took < STOP_S / 2 and doc["interrupted"] is True
    assert doc["metrics"]["count"]["value"] == 1 == len(doc["events"])


def hil_long_work(policy_args, duration_s):
    return ["hil", "--payload", "work", "--work-us", "200000", "--period-us", "1000",
            "--duration-s", str(duration_s), *policy_args]


@pytest.mark.parametrize("policy_args", [
    pytest.param(("--priority", "99"), marks=needs_root, id="fifo99"),
    pytest.param(QUIET, id="other"),
])
@pytest.mark.shared
def test_hil_work_longer_than_the_period_stops_at_its_duration(engine_bin, policy_args):
    """A 200 ms step every 1 ms: the simulation can never catch up; the run still
    ends at --duration-s (+ start delay 100 ms + linger 200 ms), not when the
    backlog of a thousand 200 ms steps is worked off."""
    t0 = time.monotonic()
    p = subprocess.run([engine_bin, *hil_long_work(policy_args, 1)], capture_output=True, text=True,
                       timeout=30)
    took = time.monotonic() - t0
    doc = json.loads(p.stdout)
    assert p.returncode == 0, p.stderr
    assert took < 1.0 + 0.1 + 0.2 + STOP_S       # working off the backlog would take 200 s
    m = doc["metrics"]
    assert m["sent"]["value"] == 1000
    assert m["sim_answered"]["value"] <= 10          # about one step per 200 ms
    assert m["ts"]["count"] == m["sim_answered"]["value"]
    assert m["ts"]["p50"] >= 200e3 * 1000 * 0.95      # every recorded step ran its full time


@pytest.mark.parametrize("policy_args", [
    pytest.param(("--priority", "99"), marks=needs_root, id="fifo99"),
    pytest.param(QUIET, id="other"),
])
@pytest.mark.shared
def test_hil_work_longer_than_the_period_stops_on_sigterm(engine_bin, policy_args):
    p = start(engine_bin, *hil_long_work(policy_args, 60))
    # frames were sent once a thread of the loop has used 20 ms of CPU: the simulation's
    # 200 ms step under way (the device's sends cost microseconds; set-up well under 1 ms)
    took, doc, _ = stop_and_time(p, lambda: most(p.pid, "cpu_ns") >= 20_000_000, "first step under way")
    assert took < STOP_S
    assert p.returncode == 130 and doc["interrupted"] is True
    assert doc["metrics"]["sent"]["value"] > 0


def test_hil_sim_alone_with_long_work_stops_on_sigterm(engine_bin):
    p = start(engine_bin, "hil", "--role", "sim", "--address", "127.0.0.1:0", "--payload", "work",
              "--work-us", "1000000", "--wait-s", "60", "--frames", "10", *QUIET)
    took, doc, _ = stop_and_time(p, lambda: udp_ports(p.pid), "simulation's port bound (waiting for frames)")
    assert took < STOP_S and p.returncode == 130 and doc["interrupted"] is True


PARENT = r"""
import subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(p.pid, flush=True)
p.wait()
"""


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("args", [
    ("latency", "--duration-s", "60", *QUIET),
    ("latency", "--start-delay-ms", "60000", *QUIET),
    ("hil", "--payload", "work", "--work-us", "200000", "--period-us", "1000", "--duration-s", "60", *QUIET),
], ids=["latency", "latency-start-delay", "hil-long-work"])
def test_engine_ends_when_its_parent_is_killed(engine_bin, args):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, engine_bin, *args], stdout=subprocess.PIPE,
                              text=True)
    engine_pid = int(parent.stdout.readline())
    # its threads exist: it has asked for SIGTERM at its parent's death (before them)
    wait_for(lambda: threads_of(engine_pid) >= 2, "engine threads (set up, its parent-death signal asked for)")
    assert alive(engine_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    try:       # each run would go on for 60 s
        wait_for(lambda: not alive(engine_pid), f"end of the engine within {STOP_S:.0f} s of its parent's",
                 timeout=STOP_S)
    finally:
        if alive(engine_pid):
            os.kill(engine_pid, signal.SIGKILL)


@pytest.mark.parametrize("local", [(), ("--device-local",)], ids=["anchored", "device-local"])
def test_hil_sim_alone_does_not_work_off_a_backlog_past_its_frames(engine_bin, local):
    """A device process sends 50 frames at 1 kHz to a simulation whose step is
    400 ms: the simulation ends at its first frame + 50 periods + --idle-ms (and
    one step), not after 50 steps (20 s): it answers a few frames, not 50."""
    # the device starts once the simulation holds its port (not after a fixed wait)
    sim, port = start_udp_server(lambda port: [engine_bin, "hil", "--role", "sim", "--address", f"127.0.0.1:{port}",
                                               "--frames", "50", "--payload", "work", "--work-us", "400000",
                                               "--idle-ms", "200", *local, *QUIET],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    addr = f"127.0.0.1:{port}"
    t0 = time.monotonic()
    dev = subprocess.run([engine_bin, "hil", "--role", "device", "--address", addr, "--frames", "50",
                          "--linger-ms", "0", *QUIET], capture_output=True, text=True, timeout=30)
    assert dev.returncode == 0, dev.stderr
    out, err = sim.communicate(timeout=30)
    took = time.monotonic() - t0
    doc = json.loads(out)
    assert sim.returncode == 0, err
    assert took < 0.1 + 0.05 + 0.2 + 0.4 + STOP_S       # 50 steps would take 20 s
    assert 1 <= doc["metrics"]["sim_answered"]["value"] <= 3
