"""`rtgauge lab emulate build|start|stop|status`: an emulated lab of four systems
(Debian's stock and PREEMPT_RT kernels, amd64 and armhf, under qemu-system) reached
as boards over SSH on loopback (docs/lab.md, "An emulated lab"). The subcommand lives
beside the lab it starts, not among the command modules (as hil/command.py does), so
cli/lab.py adds it without importing another command module."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from rtgauge.errors import EXIT_INTERRUPTED, UserError
from rtgauge.lab.emulate import images
from rtgauge.lab.emulate.images import cache_root
from rtgauge.lab.emulate.machines import EmulatedLab, block_signals_while
from rtgauge.lab.emulate.systems import SYSTEMS, pick

DEFAULT_TIME_LIMIT_S = 4 * 3600
PATIENCE = 10     # RTGAUGE_TARGET_PATIENCE for systems under TCG: they answer tens of times slower than a board
STOP_WAIT_S = 60  # a stop takes at most POWEROFF_S + KILL_S (rtgauge/lab/emulate/machines.py) and the exit


def register(actions) -> None:
    names = ", ".join(SYSTEMS)
    p = actions.add_parser("emulate", help="an emulated lab: Debian's stock and PREEMPT_RT kernels, amd64 and armhf, "
                           "under qemu-system (docs/lab.md)",
                           description="Build, start and stop an emulated lab: Debian 12 with its stock and "
                           f"PREEMPT_RT kernels for amd64 and armhf ({names}), booted under qemu-system "
                           "(software emulation) and reached over SSH on 127.0.0.1. Their timings say nothing "
                           "about hardware; everything else is real (docs/lab.md).")
    a = p.add_subparsers(dest="emulate_action", metavar="ACTION")
    b = a.add_parser("build", help="build (or find in the cache) the systems' images",
                     description="Build the images of the systems named (all four by default) into the cache "
                     "(~/.cache/rtgauge/emulab, or $RTGAUGE_EMULAB_CACHE); an unchanged recipe is not built again.")
    b.add_argument("systems", nargs="*", metavar="SYSTEM", help=f"among {names} (default: all)")
    b.set_defaults(func=cmd_build)
    s = a.add_parser("start", help="boot the systems and keep them up until Ctrl-C, SIGTERM or `stop`",
                     description="Boot the systems named (all four by default; their images are built first when "
                     "the cache lacks them), wait until each one's sshd answers, write the lab's ssh_config (Host "
                     "emu-SYSTEM) and keep them up until Ctrl-C, SIGTERM, `rtgauge lab emulate stop` or the time "
                     "limit; then power them off. Point rtgauge at them with RTGAUGE_SSH_CONFIG=STATE/ssh_config.")
    s.add_argument("systems", nargs="*", metavar="SYSTEM", help=f"among {names} (default: all)")
    s.add_argument("--state", metavar="DIR", default=None,
                   help="where the ssh_config, the consoles and the pid go (default ~/.cache/rtgauge/emulab/running)")
    s.add_argument("--time-limit", metavar="SECONDS", type=float, default=DEFAULT_TIME_LIMIT_S,
                   help=f"power them off after this long (default {DEFAULT_TIME_LIMIT_S} s); every qemu is "
                   "bounded by it")
    s.set_defaults(func=cmd_start)
    t = a.add_parser("stop", help="stop the emulated lab that `start` keeps up",
                     description="Ask the running `rtgauge lab emulate start` to power its systems off, and wait "
                     "until it has (seconds: a system that has not powered off within 10 s is ended; at most "
                     f"{STOP_WAIT_S} s).")
    t.add_argument("--state", metavar="DIR", default=None, help="as given to start")
    t.set_defaults(func=cmd_stop)
    st = a.add_parser("status", help="the systems, whether their images are built, whether a lab is up",
                      description="Print each system, whether its images are in the cache, and the running lab.")
    st.add_argument("--state", metavar="DIR", default=None, help="as given to start")
    st.set_defaults(func=cmd_status)
    p.set_defaults(func=no_action)


def no_action(args) -> int:
    raise UserError("rtgauge lab emulate needs an action: build, start, stop or status (docs/lab.md).")


def say(text: str) -> None:
    print(text, flush=True)


def state_dir(args) -> Path:
    return Path(args.state) if args.state else cache_root() / "running"


def cmd_build(args) -> int:
    systems = pick(args.systems)

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)     # as Ctrl-C: the build's commands are ended, nothing half-built kept
    img = images.build(systems, say)
    for s in systems:
        say(f"{s.name}: Linux {img.release(s)} ({s.arch.debian}, {'PREEMPT_RT' if s.preempt_rt else 'stock'}), "
            f"{img.system_dir(s)}")
    return 0


def running(pid: int) -> bool:
    """The process is there and not a zombie (one that has exited but whose parent has
    not reaped it yet, as a test's Popen until it waits: signal 0 still reaches it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat[stat.rindex(")") + 2:][:1] not in ("Z", "X")


def running_pid(state: Path) -> int | None:
    try:
        pid = int((state / "pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    cmdline = Path(f"/proc/{pid}/cmdline")
    with contextlib.suppress(OSError):
        if b"rtgauge" not in cmdline.read_bytes():
            return None          # a stale pid file; the number went to another program
    return pid


class Stop(Exception):
    pass


def cmd_start(args) -> int:
    if not args.time_limit > 0:
        raise UserError("--time-limit must be a positive number of seconds.")
    systems = pick(args.systems)
    state = state_dir(args)
    pid = running_pid(state)
    if pid is not None:
        raise UserError(f"an emulated lab is already up with state in {state} (process {pid}); stop it with "
                        "`rtgauge lab emulate stop`, or give another --state.")
    try:
        state.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot keep the emulated lab's state in {str(state)[:80]} ({e.strerror}); give a "
                        "writable directory with --state.") from None
    for old in state.glob("*.console"):
        old.unlink()

    def stop(signum, frame):
        raise Stop()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    img = images.build(systems, say)
    (state / "pid").write_text(f"{os.getpid()}\n")
    lab = EmulatedLab(img, systems, state, args.time_limit, say)
    say(f"Booting {', '.join(s.name for s in systems)} under qemu-system (software emulation); this takes a "
        "minute or more.")
    started = time.monotonic()
    try:
        lab.__enter__()
        try:
            for m in lab.machines:
                say(f"  {m.system.host}: ssh://{m.system.host} (127.0.0.1:{m.port}), Linux {m.release}, "
                    f"{m.system.arch.uname}{', PREEMPT_RT' if m.system.preempt_rt else ''}")
            say(f"Up in {time.monotonic() - started:.0f} s. Point rtgauge at them with")
            say(f"  export RTGAUGE_SSH_CONFIG={lab.ssh_config} RTGAUGE_TARGET_PATIENCE={PATIENCE}")
            say(f"  rtgauge doctor --target ssh://{lab.machines[0].system.host}")
            say(f"They stay up until Ctrl-C, `rtgauge lab emulate stop` or {args.time_limit:.0f} s have passed. "
                "Their timings are those of an emulator, not of hardware.")
            end = started + args.time_limit
            while time.monotonic() < end and all(m.alive() for m in lab.machines):
                time.sleep(0.5)
            dead = [m.system.name for m in lab.machines if not m.alive()]
        finally:
            block_signals_while(lab.stop)
    except Stop:
        block_signals_while(lab.stop)
        say(f"Stopped: every emulated system is powered off (in {lab.stop_s or 0:.1f} s).")
        return EXIT_INTERRUPTED
    finally:
        with contextlib.suppress(OSError):
            (state / "pid").unlink()
    if dead:
        print(f"rtgauge: the emulated {', '.join(dead)} stopped by itself; its console is in {state}.",
              file=sys.stderr)
        return 1
    say("Time limit reached: every emulated system is powered off.")
    return 0


def cmd_stop(args) -> int:
    state = state_dir(args)
    pid = running_pid(state)
    if pid is None:
        say(f"No emulated lab is up with state in {state}.")
        return 0
    started = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    end = started + STOP_WAIT_S
    while time.monotonic() < end:
        if not running(pid):
            say(f"Stopped the emulated lab (process {pid}) in {time.monotonic() - started:.1f} s.")
            return 0
        time.sleep(0.1)
    raise UserError(f"the emulated lab's process {pid} did not stop within {STOP_WAIT_S} s; kill it (its qemu "
                    "processes die with it).")


def cmd_status(args) -> int:
    img = images.images()
    for s, built in images.status():
        say(f"{s.name}: {'built, Linux ' + img.release(s) if built else 'not built'}")
    state = state_dir(args)
    pid = running_pid(state)
    say(f"Up: process {pid}, RTGAUGE_SSH_CONFIG={state / 'ssh_config'}" if pid else "No emulated lab is up.")
    return 0
