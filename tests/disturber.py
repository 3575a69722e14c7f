"""A known disturber for the attribution tests (tests/test_attribution.py): a
SCHED_FIFO process named rtg-disturb on one CPU that busy-loops for a known length
at known times, then prints when each burst ran (CLOCK_MONOTONIC ns) as JSON.

    python tests/disturber.py CPU PRIO BURST_US PERIOD_MS COUNT DELAY_MS

Bounded three ways: COUNT bursts at most, each ended by its own clock; RLIMIT_RTTIME
(the kernel sends SIGKILL to a real-time task that runs longer than it without
blocking) set just above one burst; and the parent's timeout. SIGTERM ends it early:
the bursts that ran are printed (one cut short by the signal with the time it ended)."""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time

NAME = "rtg-disturb"


class Stop(Exception):
    pass


def stop(signum, frame):
    raise Stop


def beside(run, cpu: int, priority: int, burst_us: int, period_ms: int, count: int,
           timeout: float = 300) -> tuple[str, str, list]:
    """Bursts from now until `run` (a started Popen with text pipes) has ended: its
    (stdout, stderr) and the bursts that ran. The disturber is bounded by its count and
    terminated when the run ends; a run past timeout is killed."""
    import subprocess
    dist = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(cpu), str(priority), str(burst_us),
                             str(period_ms), str(count), "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        dist.terminate()
        dout, derr = dist.communicate(timeout=60)
    assert dist.returncode == 0, derr
    return out, err, json.loads(dout)["bursts"]


def main() -> int:
    cpu, prio, burst_us, period_ms, count, delay_ms = (int(a) for a in sys.argv[1:7])
    with open("/proc/self/comm", "w") as f:
        f.write(NAME)
    os.sched_setaffinity(0, {cpu})
    limit = burst_us * 4 + 20_000     # µs of real-time CPU without blocking
    resource.setrlimit(resource.RLIMIT_RTTIME, (limit, limit + 10_000))
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
    bursts = []
    start = time.monotonic_ns() + delay_ms * 1_000_000
    b0 = None
    signal.signal(signal.SIGTERM, stop)
    try:
        for k in range(count):
            at = start + k * period_ms * 1_000_000
            now = time.monotonic_ns()
            if at > now:       # the bursts' schedule (the subject), not a wait for anything
                time.sleep((at - now) / 1e9)
            b0 = time.monotonic_ns()
            end = b0 + burst_us * 1000
            while time.monotonic_ns() < end:
                pass
            bursts.append([b0, time.monotonic_ns()])
            b0 = None
    except Stop:
        if b0 is not None:
            bursts.append([b0, time.monotonic_ns()])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    print(json.dumps({"cpu": cpu, "prio": prio, "pid": os.getpid(), "bursts": bursts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
