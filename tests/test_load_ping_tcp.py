"""The interrupt study's load condition (`ping-tcp`): a flood ping and a TCP stream
copied into a pseudo-terminal, across a veth pair between two network namespaces.
Ground truth: while it runs the machine takes far more network receive softirqs than
idle, its own counters show the traffic, and nothing is left afterwards."""

import os
import shutil
import time

import pytest

from conftest import needs_root
from rtgauge.errors import UserError
from rtgauge.loads import CONDITIONS, LoadContext, make_load, session_pids
from test_loads import net_namespaces


def net_rx_softirqs() -> int:
    with open("/proc/softirqs") as f:
        for line in f:
            if line.split(":")[0].strip() == "NET_RX":
                return sum(int(x) for x in line.split(":")[1].split())
    raise AssertionError("no NET_RX line in /proc/softirqs")


def test_ping_tcp_is_a_named_condition():
    assert "ping-tcp" in CONDITIONS
    assert "flood ping" in CONDITIONS["ping-tcp"].description


@needs_root
def test_ping_tcp_loads_the_network_path_and_leaves_nothing():
    for tool in ("ping", "ip", "unshare", "nsenter"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    seconds = 2.5
    before = net_rx_softirqs()
    time.sleep(seconds)
    idle_rate = (net_rx_softirqs() - before) / seconds

    namespaces_before = net_namespaces()
    load = make_load("ping-tcp", LoadContext())
    load.start()
    try:
        sid = load.proc.pid
        time.sleep(0.5)
        before = net_rx_softirqs()
        time.sleep(seconds)
        loaded_rate = (net_rx_softirqs() - before) / seconds
    finally:
        delivered = load.stop()

    assert delivered["condition"] == "ping-tcp" and delivered["alive_until_stop"], delivered
    assert delivered["ping_sent"] > 1000 and delivered["ping_received"] > 0.9 * delivered["ping_sent"], delivered
    assert delivered["tcp_received_bytes"] > 2**20, delivered
    assert delivered["tty_bytes"] > 0.5 * delivered["tcp_received_bytes"], delivered
    assert len(delivered["namespaces"]) == 2, delivered
    # the veth traffic is received in NET_RX softirqs: far above what the machine takes idle
    assert loaded_rate > max(1000.0, 10 * idle_rate), (idle_rate, loaded_rate)
    assert not session_pids(sid), "a process of the load's session is left"
    end = time.monotonic() + 5
    while (net_namespaces() - namespaces_before) & set(delivered["namespaces"]) and time.monotonic() < end:
        time.sleep(0.1)
    assert not (net_namespaces() - namespaces_before) & set(delivered["namespaces"]), \
        "a network namespace of the load is left"


def test_ping_tcp_without_ping_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError, match="iputils-ping|iproute2|util-linux"):
        make_load("ping-tcp", LoadContext()).check()
