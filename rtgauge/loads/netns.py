"""Loads between two anonymous network namespaces joined by a veth pair: UDP (net
with --allow-netns) and the interrupt study's flood ping + TCP stream (ping-tcp). The
shell script that makes the pair is here, with the traffic each load sends across it."""

from __future__ import annotations

import os
import re
import shutil
import sys

from rtgauge.errors import UserError
from rtgauge.loads.base import HERE, ProcessLoad

UDPFLOOD = HERE / "udpflood.py"
TCPCOPY = HERE / "tcpcopy.py"

NETNS_PAIR_SCRIPT = r"""
set -e
self=$(readlink /proc/self/ns/net)
unshare --net sleep 2147483647 & A=$!
unshare --net sleep 2147483647 & B=$!
for p in $A $B; do
    i=0
    while [ "$(readlink /proc/$p/ns/net)" = "$self" ]; do
        i=$((i+1)); [ $i -lt 500 ] || { echo "namespace did not appear"; exit 3; }; sleep 0.01
    done
done
echo "netns $(readlink /proc/$A/ns/net) $(readlink /proc/$B/ns/net)"
{ip} link add rtg0 netns $A type veth peer name rtg1 netns $B
nsenter -t $A -n {ip} addr add 10.254.0.1/30 dev rtg0
nsenter -t $A -n {ip} link set rtg0 up
nsenter -t $B -n {ip} addr add 10.254.0.2/30 dev rtg1
nsenter -t $B -n {ip} link set rtg1 up
# background jobs of a script ignore SIGINT: pass the stop on to the namespace holders
trap 'kill -TERM $A $B 2>/dev/null' INT TERM
"""

VETH_TRAFFIC = """
nsenter -t $B -n {py} {flood} recv 10.254.0.2 5201 recv.count &
nsenter -t $A -n {py} {flood} send 10.254.0.2 5201 send.count &
wait
"""

# The interrupt study's load: a flood ping and a TCP stream copied to a (pseudo)
# serial line, both across the veth pair, so the measured CPU takes network
# interrupts and softirqs as on the study's target.
PING_TCP_TRAFFIC = """
nsenter -t $B -n {py} {tcpcopy} recv 10.254.0.2 5202 recv.count &
nsenter -t $A -n {py} {tcpcopy} send 10.254.0.2 5202 send.count &
nsenter -t $A -n {ping} -f -q -s 56 10.254.0.2 > ping.txt 2>&1 &
wait
"""


class NetnsPair(ProcessLoad):
    """Traffic between two anonymous network namespaces joined by a veth pair
    (10.254.0.1 -> 10.254.0.2). The namespaces live as long as their holder
    processes, which the supervisor kills with the load: nothing is left behind."""

    traffic = ""
    tools: tuple[str, ...] = ("ip", "unshare", "nsenter", "sh")

    def script(self) -> str:
        return (NETNS_PAIR_SCRIPT + self.traffic).replace("{ip}", shutil.which("ip") or "ip") \
            .replace("{py}", sys.executable).replace("{flood}", str(UDPFLOOD)) \
            .replace("{tcpcopy}", str(TCPCOPY)).replace("{ping}", shutil.which("ping") or "ping")

    def argv(self) -> list[str]:
        return ["sh", "-c", self.script()]

    def check(self) -> None:
        super().check()
        if os.geteuid() != 0:
            raise UserError(f"the {self.name} load creates network namespaces, which needs root; "
                            "run rtgauge as root or choose another condition.")

    def read_counts(self, role: str) -> list[int]:
        try:
            return [int(x) for x in (self.workdir / f"{role}.count").read_text().split()]
        except (OSError, ValueError):
            return []

    def details(self) -> dict:
        out: dict = {"path": "veth 10.254.0.1 -> 10.254.0.2 between two namespaces"}
        for line in (self.workdir / "log.txt").read_text(errors="replace").splitlines():
            if line.startswith("netns "):
                out["namespaces"] = line.split()[1:]
        return out


class VethNet(NetnsPair):
    name = "net"
    description = "UDP through a veth pair between two network namespaces (--allow-netns)"
    traffic = VETH_TRAFFIC

    def tool_name(self) -> str:
        return "veth"

    def details(self) -> dict:
        out = super().details()
        for role in ("send", "recv"):
            counts = self.read_counts(role)
            out[f"{role}_packets"] = counts[0] if counts else 0
            if counts:
                out[f"{role}_bytes"] = counts[1]
        return out


class PingTcp(NetnsPair):
    """The interrupt study's load condition."""

    name = "ping-tcp"
    description = ("the interrupt study's load: a flood ping and a TCP stream copied into a "
                   "pseudo-terminal, across a veth pair between two network namespaces")
    tools = NetnsPair.tools + ("ping",)
    traffic = PING_TCP_TRAFFIC

    def tool_name(self) -> str:
        return "ping+tcp"

    def details(self) -> dict:
        out = super().details()
        sent, received = self.read_counts("send"), self.read_counts("recv")
        out["tcp_sent_bytes"] = sent[0] if sent else 0
        out["tcp_received_bytes"] = received[0] if received else 0
        out["tty_bytes"] = received[1] if len(received) > 1 else 0
        try:
            summary = (self.workdir / "ping.txt").read_text(errors="replace")
        except OSError:
            summary = ""
        m = re.search(r"(\d+) packets transmitted, (\d+) received", summary)
        out["ping_sent"], out["ping_received"] = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        return out
