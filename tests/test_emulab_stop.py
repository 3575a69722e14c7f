"""Stopping the emulated lab, without qemu (tests/test_emulab.py boots the real
systems): `rtgauge lab emulate stop` returns as soon as the lab's process has exited,
also while it is a zombie its parent has not reaped yet (a test's Popen: the stop used
to wait its whole 120 s for one); EmulatedLab.stop ends every system in parallel
within its deadlines, a process that ignores SIGTERM included, and leaves none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from readiness import wait_for
from rtgauge.lab.emulate.command import running
from rtgauge.lab.emulate import machines
from rtgauge.lab.emulate.machines import EmulatedLab, Machine
from rtgauge.lab.emulate.systems import SYSTEMS

REPO = Path(__file__).resolve().parent.parent


def state_of(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def wait_for_state(pid: int, state: str, seconds: float = 30) -> None:
    wait_for(lambda: state_of(pid) == state, f"state {state} of process {pid}", timeout=seconds)


def test_a_zombie_is_not_running():
    p = subprocess.Popen(["true"])
    try:
        wait_for_state(p.pid, "Z")
        os.kill(p.pid, 0)                   # signal 0 still reaches it: not a test of life
        assert running(p.pid) is False
    finally:
        p.wait()
    assert running(p.pid) is False
    assert running(os.getpid()) is True


def test_stop_returns_when_the_lab_process_has_exited_unreaped(tmp_path):
    """The lab's `start` stands in as a process named rtgauge that exits on SIGTERM and
    stays a zombie of this test until it waits, as in tests/test_emulab.py's fixture."""
    # it says "ready" once its SIGTERM handler is in, then waits for a signal
    stand_in = subprocess.Popen([sys.executable, "-c", "import signal\n"
                                 "signal.signal(signal.SIGTERM, lambda *a: exit(130))\nprint('ready', flush=True)\n"
                                 "signal.pause()", "rtgauge-lab-stand-in"], stdout=subprocess.PIPE, text=True)
    try:
        assert stand_in.stdout.readline() == "ready\n"
        (tmp_path / "pid").write_text(f"{stand_in.pid}\n")
        started = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "rtgauge", "lab", "emulate", "stop", "--state", str(tmp_path)],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
        took = time.monotonic() - started
        assert p.returncode == 0 and f"Stopped the emulated lab (process {stand_in.pid})" in p.stdout, p.stdout + p.stderr
        assert state_of(stand_in.pid) == "Z"          # not reaped: the stop did not wait for that
        assert took < 60, took                           # it used to wait 120 s and then fail
    finally:
        stand_in.kill()
        stand_in.wait()


def test_lab_stop_ends_every_system_in_parallel_within_its_deadlines(tmp_path, monkeypatch):
    """Four stand-in 'qemu' processes, ready (so a poweroff is asked over SSH, to a port
    where nothing listens) and one ignoring SIGTERM: all gone within POWEROFF_S + KILL_S
    (plus the machine's slowness), in parallel, not one after another."""
    monkeypatch.setattr(machines, "POWEROFF_S", 2)
    monkeypatch.setattr(machines, "KILL_S", 2)
    img = SimpleNamespace(login_key=tmp_path / "key", host_key_alias="emulab", known_hosts=tmp_path / "known")
    lab = EmulatedLab(img, [], tmp_path, 600)
    procs = []
    for i, s in enumerate(SYSTEMS.values()):
        deaf = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if i == 0 else ""
        ready = tmp_path / f"ready-{i}"
        p = subprocess.Popen([sys.executable, "-c", f"import signal; {deaf}open({str(ready)!r}, 'w'); "
                              "signal.pause()"], start_new_session=True)
        procs.append(p)
        lab.machines.append(Machine(s, machines.free_port(), p, tmp_path / f"{s.name}.console",
                                    time.monotonic() + 600, "6.1", ready=True))
    wait_for(lambda: all((tmp_path / f"ready-{i}").exists() for i in range(len(procs))),
             "ready files of the four stand-ins (SIGTERM ignored where asked)")
    (tmp_path / "ssh_config").write_text("Host x\n")
    try:
        started = time.monotonic()
        lab.stop()
        took = time.monotonic() - started
        assert all(p.poll() is not None for p in procs)
        assert procs[0].returncode == -signal.SIGKILL            # it ignored SIGTERM
        assert all(p.returncode == -signal.SIGTERM for p in procs[1:])
        assert not (tmp_path / "ssh_config").exists()
        assert 2 <= took < 2 + 2 + 20, took       # the deadlines, once for all four (generous for a loaded machine)
        assert lab.stop_s is not None
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
