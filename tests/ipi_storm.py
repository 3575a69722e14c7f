"""A known interrupt storm for the attribution tests (tests/test_attribution_storm.py):
bursts of function-call IPIs (the call_function_single vector) on a measured CPU, sent
from a process on another CPU, at known times.

    python tests/ipi_storm.py MEASURED SENDER_CPU BURST_US PERIOD_MS COUNT DELAY_MS

How: perf counting events of the software "dummy" kind (they never count anything)
bound to the measured CPU (perf_event_open with pid -1, cpu MEASURED). Enabling or
disabling such an event from another CPU is a cross-CPU function call: the kernel
sends the measured CPU an IPI and the work runs there, in the IPI's hard-interrupt
context, with interrupts off. Enabling re-schedules every enabled event of the CPU's
software-event context, so with thousands of them enabled (GROUPS groups of
GROUP_SIZE) each enabling IPI holds the measured CPU for a good fraction of a
millisecond (0.1 to 1.4 ms with 4,000 on this project's development VM; 8,000 are used:
with 4,000 a quiet machine left one or two bursts of ten below the test's threshold), and the burst is a run of such IPIs back to back. Between
bursts every event is disabled: nothing runs on the measured CPU.

Protocol on stdin/stdout, so that the setup and the teardown (opening and closing the
events are IPIs too) stay outside the measurement: the storm opens its events, prints
"ready", waits for a line "go" on stdin, sleeps DELAY_MS, runs COUNT bursts PERIOD_MS
apart (fewer if a line "stop" comes first), prints one JSON line (the bursts' [start, end] in CLOCK_MONOTONIC ns and the IPIs
each sent), then waits for stdin to close before closing the events and exiting.

Bounded: COUNT bursts at most, each ended by its own clock; the sender runs SCHED_FIFO
(its bursts come when they are due) under RLIMIT_RTTIME set just above one burst; the
events go with the process (closed by the kernel even when it is killed); stdin closed
(the test gone) ends it."""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import select
import struct
import sys
import time

NAME = "rtg-ipistorm"
GROUPS, GROUP_SIZE = 8, 1000
PRIO = 50
PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY = 1, 9
PERF_FLAG_FD_CLOEXEC = 0x8
ENABLE, DISABLE = 0x2400, 0x2401          # PERF_EVENT_IOC_ENABLE / _DISABLE
ATTR_SIZE = 128

libc = ctypes.CDLL(None, use_errno=True)


def open_event(cpu: int, group: int, disabled: bool) -> int:
    attr = bytearray(ATTR_SIZE)
    # type, size, config, sample_period, sample_type, read_format, flags (bit 0: disabled)
    struct.pack_into("IIQQQQQ", attr, 0, PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_DUMMY, 0, 0, 0,
                     1 if disabled else 0)
    buf = (ctypes.c_char * ATTR_SIZE).from_buffer(attr)
    fd = libc.syscall(PERF_EVENT_OPEN[os.uname().machine], buf, -1, cpu, group, PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"perf_event_open on CPU {cpu}: {os.strerror(err)}")
    return fd


def main() -> int:
    measured, sender, burst_us, period_ms, count, delay_ms = (int(a) for a in sys.argv[1:7])
    with open("/proc/self/comm", "w") as f:
        f.write(NAME)
    os.sched_setaffinity(0, {sender})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = GROUPS * (GROUP_SIZE + 1) + 64
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    leaders, fds = [], []
    for _ in range(GROUPS):
        leader = open_event(measured, -1, True)
        leaders.append(leader)
        fds += [open_event(measured, leader, False) for _ in range(GROUP_SIZE)]
    probe = open_event(measured, -1, True)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 0
    limit = burst_us * 4 + 50_000     # µs of real-time CPU without blocking
    resource.setrlimit(resource.RLIMIT_RTTIME, (limit, limit + 10_000))
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PRIO))
    bursts, ipis = [], []
    start = time.monotonic_ns() + delay_ms * 1_000_000
    for k in range(count):
        at = start + k * period_ms * 1_000_000
        now = time.monotonic_ns()
        if at > now and select.select([sys.stdin], [], [], (at - now) / 1e9)[0]:
            break                            # "stop" (or stdin closed): no more bursts
        b0 = time.monotonic_ns()
        end = b0 + burst_us * 1000
        sent = 0
        for leader in leaders:               # the storm's load: thousands of enabled events
            fcntl.ioctl(leader, ENABLE, 0)
            sent += 1
        while time.monotonic_ns() < end:     # each enable re-schedules them all, in the IPI
            fcntl.ioctl(probe, ENABLE, 0)
            fcntl.ioctl(probe, DISABLE, 0)
            sent += 2
        for leader in leaders:
            fcntl.ioctl(leader, DISABLE, 0)
            sent += 1
        bursts.append([b0, time.monotonic_ns()])
        ipis.append(sent)
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    print(json.dumps({"cpu": measured, "sender_cpu": sender, "pid": os.getpid(), "bursts": bursts, "ipis": ipis}),
          flush=True)
    sys.stdin.read()                         # the events stay (disabled) until the caller is done
    for fd in leaders + [probe] + fds:       # leaders first: their siblings then close one by one cheaply
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
