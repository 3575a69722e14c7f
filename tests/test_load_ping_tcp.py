"""The interrupt study's load condition (`ping-tcp`): a flood ping and a TCP stream
copied into a pseudo-terminal, across a veth pair between two network namespaces.
Ground truth: while it runs the machine takes far more network receive softirqs than
idle, its own counters show the traffic, and nothing is left afterwards."""

import os
import shutil
import time

import pytest

from conftest import needs_root
from readiness import snmp, wait_for
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
    time.sleep(seconds)              # the span the idle rate is taken over: the subject, not a wait
    idle_rate = (net_rx_softirqs() - before) / seconds

    namespaces_before = net_namespaces()
    load = make_load("ping-tcp", LoadContext())
    load.start()
    try:
        sid = load.proc.pid
        host = os.readlink("/proc/self/ns/net")

        def most_in_its_namespaces(proto: str, field: str) -> int:
            """The largest PROTO FIELD counter of the load's own network namespaces."""
            best = 0
            for pid in session_pids(sid):
                try:
                    if os.readlink(f"/proc/{pid}/ns/net") != host:
                        best = max(best, snmp(pid, proto, field))
                except OSError:
                    continue
            return best
        # the rate is taken once the traffic runs: the receiving namespace has taken the
        # stream's segments and the flood's echo requests
        wait_for(lambda: most_in_its_namespaces("Tcp", "InSegs") >= 1000
                 and most_in_its_namespaces("Icmp", "InEchos") >= 100,
                 "TCP segments and ping echo requests received in the load's namespaces", proc=load.proc)
        before = net_rx_softirqs()
        time.sleep(seconds)          # the span the loaded rate is taken over: the subject
        loaded_rate = (net_rx_softirqs() - before) / seconds
    finally:
        delivered = load.stop()

    assert delivered["condition"] == "ping-tcp" and delivered["alive_until_stop"], delivered
    assert delivered["ping_sent"] > 1000 and delivered["ping_received"] > 0.9 * delivered["ping_sent"], delivered
    assert delivered["tcp_received_bytes"] > 2**20, delivered
    assert delivered["tty_bytes"] > 0.5 * delivered["tcp_received_bytes"], delivered
    assert len(delivered["namespaces"]) == 2, delivered
    assert not session_pids(sid), "a process of the load's session is left"
    # looked at as soon as the load ended: a namespace's number is given again to the next
    # one made, and the other passes make namespaces (the SSH boards)
    end = time.monotonic() + 5
    while (net_namespaces() - namespaces_before) & set(delivered["namespaces"]) and time.monotonic() < end:
        time.sleep(0.1)
    assert not (net_namespaces() - namespaces_before) & set(delivered["namespaces"]), \
        "a network namespace of the load is left"
    # the veth traffic is received in NET_RX softirqs: well above what the machine takes
    # without it (quiet, ten times that). The suite's other passes run beside this one, and
    # their network loads raise any span's rate: the rate without the load is the lower of
    # the spans before and after it
    before = net_rx_softirqs()
    time.sleep(seconds)              # the span the idle rate is taken over again: the subject
    idle_rate = min(idle_rate, (net_rx_softirqs() - before) / seconds)
    assert loaded_rate > idle_rate + 1000.0, (idle_rate, loaded_rate)


def test_ping_tcp_without_ping_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError, match="iputils-ping|iproute2|util-linux"):
        make_load("ping-tcp", LoadContext()).check()
