"""The `ipi` load's worker: a flood of function-call IPIs onto measured CPUs.

    python ipiflood.py TARGET:SENDER[,TARGET:SENDER...] MAX_S

One process per pair, pinned to SENDER: it opens a perf event of the software "dummy"
kind (it never counts anything) bound to CPU TARGET and enables and disables it in a
loop. Each toggle from another CPU is a cross-CPU function call: the kernel sends
TARGET an IPI (call_function_single) and runs the toggle there, in hard-interrupt
context with interrupts off, while the sender waits for it; so the flood is as fast
as TARGET takes the interrupts, one at a time, none queued. Each process writes the
toggles it made to `ipis.TARGET` in its working directory every half second and when
it stops.

Bounded: each process stops after MAX_S seconds, when its parent (the load's
supervisor) is gone, or on SIGINT/SIGTERM; its event is closed by the kernel with the
process, so nothing is left enabled."""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import struct
import sys
import time

PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "armv7l": 364, "riscv64": 241}
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY = 1, 9
PERF_FLAG_FD_CLOEXEC = 0x8
ENABLE, DISABLE = 0x2400, 0x2401          # PERF_EVENT_IOC_ENABLE / _DISABLE
ATTR_SIZE = 128

_libc = ctypes.CDLL(None, use_errno=True)


def open_dummy(cpu: int) -> int:
    """A disabled dummy event bound to cpu; OSError (errno kept) when refused."""
    number = PERF_EVENT_OPEN.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"perf_event_open's system call number is not known for {os.uname().machine}")
    attr = bytearray(ATTR_SIZE)
    # type, size, config, sample_period, sample_type, read_format, flags (bit 0: disabled)
    struct.pack_into("IIQQQQQ", attr, 0, PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_DUMMY, 0, 0, 0, 1)
    buf = (ctypes.c_char * ATTR_SIZE).from_buffer(attr)
    fd = _libc.syscall(number, buf, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def flood(target: int, sender: int, max_s: float) -> None:
    os.sched_setaffinity(0, {sender})
    fd = open_dummy(target)
    parent = os.getppid()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    out = f"ipis.{target}"
    sent = 0
    end = time.monotonic() + max_s
    next_write = time.monotonic() + 0.5
    while not stop:
        for _ in range(500):
            fcntl.ioctl(fd, ENABLE, 0)
            fcntl.ioctl(fd, DISABLE, 0)
        sent += 1000
        now = time.monotonic()
        if now >= next_write:
            write_count(out, sent)
            next_write = now + 0.5
            if os.getppid() != parent:
                break
        if now >= end:
            break
    write_count(out, sent)
    os.close(fd)


def write_count(path: str, n: int) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{n}\n")
    os.replace(tmp, path)


def main() -> int:
    pairs = [tuple(int(x) for x in p.split(":")) for p in sys.argv[1].split(",")]
    max_s = float(sys.argv[2])
    children = []
    for target, sender in pairs:
        pid = os.fork()
        if pid == 0:
            try:
                flood(target, sender, max_s)
            except OSError as e:
                print(f"ipi flood onto CPU {target}: {e}", file=sys.stderr, flush=True)
                os._exit(1)
            os._exit(0)
        children.append(pid)
    # the children take SIGINT/SIGTERM themselves (the supervisor signals the session)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status = 0
    for pid in children:
        _, st = os.waitpid(pid, 0)
        status = status or (os.waitstatus_to_exitcode(st) != 0)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
