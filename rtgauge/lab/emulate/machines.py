"""Boot the emulated systems under qemu-system and reach them over SSH on loopback.

Each system is one qemu process (software emulation, TCG): user-mode networking
restricted to the guest and one forward, 127.0.0.1:PORT to the guest's sshd. It
is ready when its sshd answers with its banner. It cannot outlive rtgauge or its
time:

- the kernel kills it when the process that started it dies, SIGKILL included
  (PR_SET_PDEATHSIG, set between fork and exec);
- a watchdog thread kills it at its time limit, and its CPU time is bounded by
  RLIMIT_CPU (the kernel kills it past that, whatever becomes of rtgauge);
- it runs in a session of its own, so a Ctrl-C in the terminal reaches rtgauge
  only, which then asks each system to power off (busybox poweroff over SSH), all
  at once, and ends with SIGTERM, then SIGKILL, the qemu processes that have not
  stopped within POWEROFF_S.

The forward lives in the qemu process, so it goes with it; the images are read,
never written (the root file system is an initramfs), so no image is left either.

The lab's ssh_config (HOST aliases emu-SYSTEM, the lab's key, its known host key)
is written into the state directory; rtgauge reads it when RTGAUGE_SSH_CONFIG
names it (rtgauge/remote/ssh.py)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rtgauge.errors import RunFailed, UserError
from rtgauge.lab.emulate.images import Images
from rtgauge.lab.emulate.systems import System

BOOT_TIMEOUT_S = 600        # TCG on a loaded 2-CPU machine: generous
ASK_S = 5                   # a poweroff request over SSH, at most
POWEROFF_S = 10             # from the request to SIGTERM of the qemu processes still running
KILL_S = 3                  # from SIGTERM to SIGKILL
MEMORY_MB = 1024
CPUS = 1                    # TCG uses a host CPU a virtual one; the host has few
PR_SET_PDEATHSIG = 1


def _child_setup(cpu_limit_s: int):
    def setup() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:          # the parent died before prctl: go now
            os._exit(1)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit_s, cpu_limit_s + 5))
    return setup


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sshd_answers(port: int) -> bool:
    """Its sshd's banner: qemu accepts the forward's connection before the guest listens."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.settimeout(30)     # under TCG sshd takes seconds to start a connection's process
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


@dataclass
class Machine:
    system: System
    port: int
    proc: subprocess.Popen
    log: Path
    deadline: float
    release: str
    ready: bool = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def console_tail(self, lines: int = 8) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def qemu_command(img: Images, system: System, port: int, log: Path) -> list[str]:
    a = system.arch
    # rtgauge.emulated: the lab's word that this is TCG, kept as evidence beside what the
    # system shows of itself (DMI on amd64; on armhf the device tree cannot tell TCG from KVM)
    append = (f"console={a.console} rtgauge.hostname={system.host} rtgauge.emulated=qemu-tcg panic=5 "
              "quiet loglevel=4")
    return [a.qemu, *a.machine, "-smp", str(CPUS), "-m", str(MEMORY_MB), "-accel", "tcg",
            "-kernel", str(img.kernel(system)), "-initrd", str(img.initrd(system)), "-append", append,
            "-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
            "-device", f"{a.nic},netdev=net0",
            "-display", "none", "-monitor", "none", "-serial", f"file:{log}", "-no-reboot"]


@dataclass
class EmulatedLab:
    """with EmulatedLab(images, systems, state_dir, time_limit_s) as lab: lab.machines ..."""
    img: Images
    systems: list[System]
    state: Path
    time_limit_s: float
    say: object = print
    machines: list[Machine] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stop_s: float | None = None
        self._done = threading.Event()
        self._watchdog: threading.Thread | None = None

    @property
    def ssh_config(self) -> Path:
        return self.state / "ssh_config"

    def __enter__(self) -> EmulatedLab:
        missing = sorted({s.arch.qemu for s in self.systems if shutil.which(s.arch.qemu) is None})
        if missing:
            pkgs = " ".join(sorted({"qemu-system-x86" if "x86" in m else "qemu-system-arm" for m in missing}))
            raise UserError(f"{', '.join(missing)} is not installed; install it (apt-get install {pkgs}; "
                            "scripts/setup.sh --all does).")
        self.state.mkdir(parents=True, exist_ok=True)
        try:
            self.start()
            self.wait_ready()
            self.write_ssh_config()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        cpu_limit = int(self.time_limit_s * CPUS) + 60
        end = time.monotonic() + self.time_limit_s
        for s in self.systems:
            for attempt in range(3):     # a port taken between free_port() and qemu's bind: try another
                port = free_port()
                log = self.state / f"{s.name}.console"
                proc = subprocess.Popen(qemu_command(self.img, s, port, log), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=open(self.state / f"{s.name}.qemu", "w"),
                                        start_new_session=True, preexec_fn=_child_setup(cpu_limit))
                time.sleep(0.5)
                if proc.poll() is None or "host forwarding" not in (self.state / f"{s.name}.qemu").read_text():
                    break
            self.machines.append(Machine(s, port, proc, log, end, self.img.release(s)))
        self._watchdog = threading.Thread(target=self._watch, name="rtgauge-emulab-watchdog", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        while not self._done.wait(1):
            if time.monotonic() >= min(m.deadline for m in self.machines):
                for m in self.machines:
                    if m.alive() and time.monotonic() >= m.deadline:
                        m.proc.kill()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        waiting = list(self.machines)
        while waiting:
            for m in list(waiting):
                if not m.alive():
                    err = (self.state / f"{m.system.name}.qemu").read_text(errors="replace").strip()
                    raise RunFailed(f"the emulated {m.system.name} stopped while booting ({err or m.console_tail()}).")
                if sshd_answers(m.port):
                    m.ready = True
                    waiting.remove(m)
            if waiting and time.monotonic() > deadline:
                names = ", ".join(m.system.name for m in waiting)
                raise RunFailed(f"the emulated {names} did not answer on SSH within {BOOT_TIMEOUT_S} s "
                                f"(console: {waiting[0].console_tail()}).")
            if waiting:
                time.sleep(1)

    def write_ssh_config(self) -> None:
        blocks = []
        for m in self.machines:
            blocks.append(f"""Host {m.system.host}
    HostName 127.0.0.1
    Port {m.port}
    User root
    IdentityFile {self.img.login_key}
    IdentitiesOnly yes
    HostKeyAlias {self.img.host_key_alias}
    UserKnownHostsFile {self.img.known_hosts}
    StrictHostKeyChecking yes
""")
        tmp = self.ssh_config.with_suffix(".tmp")
        tmp.write_text("".join(blocks))
        tmp.rename(self.ssh_config)

    def stop(self) -> None:
        """Stop every system at once, bounded: ask each to power off (busybox poweroff over
        SSH, at most ASK_S), give them until POWEROFF_S, then SIGTERM what still runs (qemu
        exits at once; the guest writes nothing back, so nothing is lost) and SIGKILL what
        has not gone KILL_S later; remove the ssh_config. Under TCG on a loaded machine an
        SSH login alone can take longer than the whole of this: the deadline, not the
        guests, decides how long a stop takes."""
        self._done.set()
        with contextlib.suppress(OSError):
            self.ssh_config.unlink()
        started = time.monotonic()
        running = [m for m in self.machines if m.alive()]
        asked = []          # all at once: one SSH login takes seconds under TCG
        for m in running:
            if m.ready and shutil.which("ssh"):
                with contextlib.suppress(OSError):
                    asked.append(subprocess.Popen(
                        ["ssh", "-F", "/dev/null", "-p", str(m.port), "-i", str(self.img.login_key),
                         "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                         "-o", f"HostKeyAlias={self.img.host_key_alias}",
                         "-o", f"UserKnownHostsFile={self.img.known_hosts}",
                         "-o", f"ConnectTimeout={ASK_S}", "root@127.0.0.1", "busybox poweroff"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True))
            else:            # still booting: nothing to ask
                with contextlib.suppress(OSError):
                    m.proc.terminate()
        try:
            wait_all(running, started + POWEROFF_S, asked, started + ASK_S)
            for m in running:
                if m.alive():
                    with contextlib.suppress(OSError):
                        m.proc.terminate()
            wait_all(running, time.monotonic() + KILL_S)
        finally:
            for a in asked:
                if a.poll() is None:
                    a.kill()
                a.wait()
            for m in running:
                if m.alive():
                    m.proc.kill()
                m.proc.wait()
        if running:
            self.stop_s = time.monotonic() - started


def wait_all(machines: list[Machine], until: float, asked=(), ask_until: float = 0.0) -> None:
    """Until every machine's qemu has exited or `until`; the poweroff requests (asked)
    are killed at ask_until."""
    while time.monotonic() < until and any(m.alive() for m in machines):
        if asked and time.monotonic() >= ask_until:
            for a in asked:
                if a.poll() is None:
                    a.kill()
        time.sleep(0.1)


def block_signals_while(fn):
    """fn() with SIGINT and SIGTERM held off (a stop must finish)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return fn()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
