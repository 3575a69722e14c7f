"""hil across a veth pair between two network namespaces (rtgauge.hil.veth): both
documents come back, and the namespaces are gone afterwards, also when one side
is killed in the middle of the run."""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest

from readiness import udp_datagrams_in, wait_for
from rtgauge.errors import UserError
from rtgauge.hil.veth import merge, netns_alive, run_veth, split_options

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "unshare", "nsenter")),
    reason="needs root, ip (iproute2), unshare and nsenter (util-linux) for network namespaces")

QUIET = ["--policy", "other", "--no-mlock"]


def value(doc, name):
    return doc["metrics"][name]["value"]


def test_loop_through_veth_and_namespaces_removed(engine_bin):
    r = run_veth(["--frames", "500", "--period-us", "1000", *QUIET], time_limit_s=60, engine=engine_bin)
    assert r.errors == [] and r.sim_status == 0 and r.device_status == 0
    assert len(r.namespaces) == 2 and len(set(r.namespaces)) == 2
    assert not any(netns_alive(ns) for ns in r.namespaces)
    d = merge(r)
    assert d["env"]["transport"] == "veth"
    assert value(d, "sent") == 500
    assert value(d, "sent") == value(d, "received") + value(d, "lost_frames")
    assert value(d, "sim_received") + value(d, "sequence_gaps") == 500
    assert d["metrics"]["round_trip"]["count"] == value(d, "received")
    assert d["env"]["sim_env"]["sim_address"].startswith("10.254.")


def kill_when_running(side):
    """Kill one side once the loop runs: a frame has reached the simulation's network
    namespace (its UDP counters, /proc/PID/net/snmp; nothing else sends there)."""
    def act(pair, sim, dev):
        wait_for(lambda: udp_datagrams_in(pair.holders[0].pid) >= 1, "frame at the simulation's namespace",
                 proc=sim if side == "sim" else dev)
        (sim if side == "sim" else dev).send_signal(signal.SIGKILL)
    return act


def test_sim_killed_frames_lost_and_namespaces_removed(engine_bin):
    r = run_veth(["--frames", "2000", "--period-us", "1000", "--linger-ms", "100", *QUIET],
                 time_limit_s=60, engine=engine_bin, on_started=kill_when_running("sim"))
    assert r.sim is None and r.sim_status == -signal.SIGKILL
    assert any("simulation" in e for e in r.errors)
    dev = r.device
    assert dev["ok"] and value(dev, "sent") == 2000
    # the simulation died at the first frame of a two-second run: (nearly) all were lost
    assert value(dev, "lost_frames") >= 1000
    assert value(dev, "sent") == value(dev, "received") + value(dev, "lost_frames")
    assert not any(netns_alive(ns) for ns in r.namespaces)
    with pytest.raises(UserError):
        merge(r)


def test_device_killed_sim_stops_and_namespaces_removed(engine_bin):
    t0 = time.monotonic()
    r = run_veth(["--frames", "60000", "--period-us", "1000", "--idle-ms", "300", *QUIET],
                 time_limit_s=120, engine=engine_bin, on_started=kill_when_running("device"))
    assert time.monotonic() - t0 < 30          # a watchdog: the device would have sent for 60 s
    assert r.device is None and r.device_status == -signal.SIGKILL
    assert r.sim is not None and r.sim["ok"]
    assert 0 < value(r.sim, "sim_received") < 60000
    assert not any(netns_alive(ns) for ns in r.namespaces)


def test_options_split_and_reserved():
    sim, dev = split_options(["--frames", "10", "--payload", "work", "--work-us", "50",
                              "--device-cpu", "0", "--allow-fallback"])
    assert sim == ["--frames", "10", "--payload", "work", "--work-us", "50", "--allow-fallback"]
    assert dev == ["--frames", "10", "--device-cpu", "0", "--allow-fallback"]
    with pytest.raises(UserError):
        split_options(["--role", "sim"])


def test_a_simulation_that_never_binds_fails_with_what_was_awaited(tmp_path, monkeypatch):
    """The device starts once the simulation holds its UDP port (read from /proc/PID/net),
    not after a fixed time: a simulation that ends first, or never binds within the
    deadline, is one clear error (what it said, that the device was not started; the port
    it waited for), and the namespaces are removed."""
    import rtgauge.hil.veth as veth
    from rtgauge.errors import RunFailed
    ends = tmp_path / "ends"
    ends.write_text("#!/bin/sh\necho 'no address here' >&2\nexit 3\n")
    ends.chmod(0o755)
    ended = run_veth(["--frames", "10"], engine=str(ends))
    assert ended.device is None and ended.sim is None
    assert ended.errors == ["the simulation side ended with status 3 and no document (no address here)",
                            "the device side was not started: the simulation ended before it listened"]
    idles = tmp_path / "idles"
    idles.write_text("#!/bin/sh\nexec sleep 60\n")
    idles.chmod(0o755)
    monkeypatch.setattr(veth, "BIND_DEADLINE_S", 0.5)
    seen = []
    real = veth.VethPair.close
    monkeypatch.setattr(veth.VethPair, "close", lambda self: seen.extend(self.namespaces) or real(self))
    with pytest.raises(RunFailed, match="had not bound UDP port 47000 within 0.5 s"):
        run_veth(["--frames", "10"], engine=str(idles))
    assert seen and not any(netns_alive(ns) for ns in seen)
