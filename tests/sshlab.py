"""A board for the SSH target tests: an OpenSSH server in a network namespace of
its own (with its own hostname, through a UTS namespace), reached from a second
namespace over a private veth pair (10.201.X.0/30, addresses that exist only
inside these two namespaces). The client side is the user's ~/.ssh/config,
written into a temporary HOME: a Host alias whose ProxyCommand runs `nc` in the
client namespace, a key generated here, the server's host key in known_hosts.
Everything (namespaces, sshd, the test user, files) is removed afterwards."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


def available() -> str | None:
    """None when a lab can be built here, else why not."""
    if os.geteuid() != 0:
        return "needs root for network namespaces and sshd"
    for exe, pkg in (("ip", "iproute2"), ("unshare", "util-linux"), ("nc", "netcat-openbsd"),
                     (SSHD, "openssh-server"), ("ssh-keygen", "openssh-client")):
        if shutil.which(exe) is None:
            return f"{exe} is missing: scripts/setup.sh --all installs {pkg}"
    return None


@dataclass
class Lab:
    home: Path                       # HOME with .ssh/config for the client
    hostname: str                    # the board's hostname (its UTS namespace)
    ns_client: str
    ns_board: str
    board_if: str                    # the board's end of the veth pair
    user: str                        # an unprivileged login on the board
    sshd: subprocess.Popen | None = None
    created: list[str] = field(default_factory=list)

    def link(self, up: bool) -> None:
        sh("ip", "netns", "exec", self.ns_board, "ip", "link", "set", self.board_if, "up" if up else "down")


def start(prelude: str = "", weighed: bool = True) -> Lab:
    """prelude: shell commands run on the board before sshd starts, in a mount
    namespace of its own (private: a bind mount there changes the board only).
    weighed: the board's sshd and sessions take the test's CPU weight (same_weight); False
    for a board that runs loads."""
    tag = secrets.token_hex(3)
    net = 10 + int(tag, 16) % 240
    client_ip, board_ip = f"10.201.{net}.1", f"10.201.{net}.2"
    root = Path(tempfile.mkdtemp(prefix="rtgauge-sshlab-"))
    home, srv = root / "home", root / "sshd"
    (home / ".ssh").mkdir(parents=True)
    srv.mkdir()
    os.chmod(root, 0o755)   # sshd reads authorized_keys as the user who logs in
    lab = Lab(home=home, hostname=f"board-{tag}", ns_client=f"rtgc-{tag}", ns_board=f"rtgb-{tag}",
              board_if=f"rtgb{tag}", user=f"rtgu{tag}")
    lab.root = root
    try:
        for ns in (lab.ns_client, lab.ns_board):
            sh("ip", "netns", "add", ns)
            lab.created.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", f"rtgc{tag}", "netns", lab.ns_client, "type", "veth",
           "peer", "name", lab.board_if, "netns", lab.ns_board)
        sh("ip", "-n", lab.ns_client, "addr", "add", f"{client_ip}/30", "dev", f"rtgc{tag}")
        sh("ip", "-n", lab.ns_board, "addr", "add", f"{board_ip}/30", "dev", lab.board_if)
        sh("ip", "-n", lab.ns_client, "link", "set", f"rtgc{tag}", "up")
        sh("ip", "-n", lab.ns_board, "link", "set", lab.board_if, "up")

        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(srv / "host_key"))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / ".ssh" / "id_ed25519"))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / ".ssh" / "stranger"))
        shutil.copy(home / ".ssh" / "id_ed25519.pub", srv / "authorized_keys")
        os.chmod(srv / "authorized_keys", 0o644)
        # an unprivileged login ('*': no password, yet not a locked account for sshd)
        sh("useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh",
           "--password", "*", lab.user)
        lab.created.append("user")
        (srv / "sshd_config").write_text(f"""\
ListenAddress {board_ip}
Port 22
HostKey {srv / 'host_key'}
PidFile {srv / 'sshd.pid'}
AuthorizedKeysFile {srv / 'authorized_keys'}
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
""")
        host_pub = (srv / "host_key.pub").read_text().split()
        (home / ".ssh" / "known_hosts").write_text(f"{board_ip} {host_pub[0]} {host_pub[1]}\n")
        proxy = f"ProxyCommand ip netns exec {lab.ns_client} nc %h %p"
        (home / ".ssh" / "config").write_text(f"""\
Host board
    HostName {board_ip}
    User root
    IdentityFile ~/.ssh/id_ed25519
    IdentitiesOnly yes
    {proxy}
Host board-closed
    HostName {board_ip}
    Port 2222
    User root
    IdentityFile ~/.ssh/id_ed25519
    {proxy}
Host board-stranger
    HostName {board_ip}
    User root
    IdentityFile ~/.ssh/stranger
    IdentitiesOnly yes
    {proxy}
Host board-user
    HostName {board_ip}
    User {lab.user}
    IdentityFile ~/.ssh/id_ed25519
    IdentitiesOnly yes
    {proxy}
""")
        Path("/run/sshd").mkdir(exist_ok=True)   # sshd's privilege separation directory
        weigh = same_weight(srv) if weighed else ""
        first = " && ".join(x for x in (weigh, f"hostname {lab.hostname}", prelude) if x)
        lab.sshd = subprocess.Popen(
            ["ip", "netns", "exec", lab.ns_board, "unshare", "--uts", *(["--mount"] if prelude or weigh else []),
             "sh", "-c", f"{first} && exec {SSHD} -D -e -f {srv / 'sshd_config'}"],
            stdout=subprocess.DEVNULL, stderr=open(srv / "sshd.log", "w"), start_new_session=True)
        deadline = time.monotonic() + 10
        while sh("ip", "netns", "exec", lab.ns_client, "nc", "-z", "-w", "1", board_ip, "22",
                 check=False).returncode != 0:
            if lab.sshd.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sshd did not start: " + (srv / "sshd.log").read_text())
            time.sleep(0.1)
        return lab
    except BaseException:
        stop(lab)
        raise


def same_weight(srv: Path) -> str:
    """The board is this machine, and sshd and every session it opens are sessions of their
    own: where the kernel groups the fair scheduler by session (autogroup), each weighs as
    a program at the default nice, whatever the test's own group weighs (scripts/test.sh
    lowers its passes' nice). A board of its own would not share the CPU at all. The shell
    line (run first in the board's own mount namespace) that gives sshd's group, and
    through /etc/ssh/sshrc (in a copy of /etc/ssh mounted there) each session's, the test's
    group's nice; "" where that is the default or there is no autogroup. Where the nice may
    not be lowered (no CAP_SYS_NICE) the writes fail and change nothing.

    Beside `stress-ng --cpu 2` and the background pass the tuning tests took twice their
    quiet time unweighed (89.9 s for the file, 47.6 s weighed), the bookkeeping of their
    runs there (facts, the tuning and its keeper) outweighed. A board that runs loads
    (stress-ng, hackbench) would, weighed, take the pass's CPU for them: tried for every
    board, the shared pass took 271 s instead of 224; those boards are not weighed."""
    try:
        nice = int(Path("/proc/self/autogroup").read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return ""
    if nice == 0:
        return ""
    etc = srv / "etc-ssh"
    shutil.copytree("/etc/ssh", etc, symlinks=True, ignore=shutil.ignore_patterns("ssh_host_*"))
    # sshd runs it with /bin/sh in every session (a command's, a shell's, sftp's) before
    # the session's program, as the user who logged in; it prints nothing
    (etc / "sshrc").write_text(f"echo {nice} 2>/dev/null >/proc/self/autogroup || true\n")
    os.chmod(etc / "sshrc", 0o644)
    return (f"{{ echo {nice} 2>/dev/null >/proc/self/autogroup || true; }} && "
            f"mount --bind {etc} /etc/ssh")


def stop(lab: Lab) -> None:
    if lab.sshd is not None and lab.sshd.poll() is None:
        os.killpg(lab.sshd.pid, signal.SIGTERM)
        try:
            lab.sshd.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(lab.sshd.pid, signal.SIGKILL)
            lab.sshd.wait()
    # sessions that outlived sshd's listener (a cut connection) belong to its namespace
    pids = sh("ip", "netns", "pids", lab.ns_board, check=False).stdout.split() if lab.ns_board in lab.created else []
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    if "user" in lab.created:
        sh("userdel", lab.user, check=False)
    for ns in (lab.ns_client, lab.ns_board):
        if ns in lab.created:
            sh("ip", "netns", "del", ns, check=False)
    shutil.rmtree(getattr(lab, "root", lab.home.parent), ignore_errors=True)


# ---- what runs on a board ---------------------------------------------------------
# The board shares this machine's /tmp and /proc with every other test (the SSH target
# tests run beside others); what is the board's is told by its UTS namespace (its sshd's:
# every session, guard, engine and load there inherits it), never by a glob of /tmp.

def uts(pid) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/uts")
    except OSError:
        return None


def _board_pids(lab: Lab):
    ns = uts(lab.sshd.pid)
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and uts(p.name) == ns:
            yield p


def board_processes(lab: Lab, name: str) -> list[int]:
    """Processes in the board's UTS namespace whose name starts with `name`."""
    found = []
    for p in _board_pids(lab):
        try:
            if (p / "comm").read_text().startswith(name):
                found.append(int(p.name))
        except OSError:
            pass
    return found


def board_dirs(lab: Lab) -> set[Path]:
    """The temporary directories there named by the board's processes (guard.sh, keep.sh)."""
    found = set()
    for p in _board_pids(lab):
        try:
            cmdline = (p / "cmdline").read_bytes()
        except OSError:
            continue
        found.update(Path(m.decode()) for m in re.findall(rb"/tmp/rtgauge\.[A-Za-z0-9]{6}", cmdline))
    return found


def engine_dirs(lab: Lab) -> set[Path]:
    """The board's temporary directories with an engine running in them now (named by
    the engine's command line: its path or its --out)."""
    found = set()
    for pid in board_processes(lab, "rtgauge-engine"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        found.update(Path(m.decode()) for m in re.findall(rb"/tmp/rtgauge\.[A-Za-z0-9]{6}", cmdline))
    return found


class Watch:
    """What appears on a board while a block runs: its temporary directories and the
    processes of given names, seen every 0.1 s (`with Watch(lab, "stress-ng") as w:`)."""

    def __init__(self, lab: Lab, *names: str):
        self.lab, self.names = lab, names
        self.dirs: set[Path] = set()
        self.seen: dict[str, set[int]] = {n: set() for n in names}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.is_set():
            self.dirs.update(board_dirs(self.lab))
            for n in self.names:
                self.seen[n].update(board_processes(self.lab, n))
            self._done.wait(0.1)       # the sampling period, ended at once by __exit__

    def __enter__(self) -> "Watch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
