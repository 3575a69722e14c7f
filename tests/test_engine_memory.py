"""Memory of a run does not grow with its length. The cycle driver stores each
cycle into a fixed ring that a collector folds into fixed-size histograms, so
the resident size of `hil` is the same at 10^5 and at 10^7 frames.

What these tests prove, and what not: every buffer of a run is allocated and
touched before the first cycle (and locked with mlockall), so the high-water
mark early in a run shows what the run will hold; comparing two planned
lengths that differ 100-fold shows the allocation does not scale with the
length (the former per-frame arrays put 10^7 frames at ~400 MB). The growth
test then checks that nothing is added while cycles run. Neither runs a 10^7
frame loop to its end (that would take hours at a realistic period)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from conftest import needs_root
from readiness import most, wait_for

QUIET = ("--policy", "other", "--no-mlock")


def status_kib(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(rest.split()[0])
    return out


def cpu() -> int:
    """The CPU the loop's threads are pinned to (the last allowed)."""
    return max(os.sched_getaffinity(0))


def sample(engine_bin, args, periods: int, then_s: tuple[float, ...] = ()) -> list[dict[str, int]]:
    """Start the engine (a thread of its loop pinned to cpu()), read its memory once that
    thread has left its CPU PERIODS times (a latency cycle or a frame stepped each: the
    loop runs), and again each of THEN_S seconds after that first look (a time of
    running is the growth test's subject, not a wait), then stop it."""
    p = subprocess.Popen([engine_bin, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    got = []
    try:
        wait_for(lambda: most(p.pid, "switches", cpu=cpu()) >= periods, f"{periods} periods of the engine's loop",
                 proc=p)
        got.append(status_kib(p.pid))
        t0 = time.monotonic()
        for t in then_s:
            time.sleep(max(0.0, t0 + t - time.monotonic()))
            assert p.poll() is None, p.stderr.read()
            got.append(status_kib(p.pid))
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=15)
    return got


@pytest.mark.parametrize("mode", [pytest.param((), marks=needs_root, id="fifo-mlocked"),
                                  pytest.param(QUIET, id="other")])
@pytest.mark.shared
def test_hil_resident_size_does_not_depend_on_the_frame_count(engine_bin, mode):
    pin = ["--sim-cpu", str(cpu())]        # the device's threads stay on the first CPU
    short, = sample(engine_bin, ["hil", "--frames", "100000", "--period-us", "1000", *pin, *mode], 1000)
    long, = sample(engine_bin, ["hil", "--frames", "10000000", "--period-us", "1000", *pin, *mode], 1000)
    assert abs(long["VmHWM"] - short["VmHWM"]) <= 0.10 * short["VmHWM"], (short, long)


def test_hil_resident_size_does_not_grow_while_it_runs(engine_bin):
    # 20 kHz: 40 000 frames in the 2 s between the looks on a quiet machine; the per-frame
    # arrays this replaced grew 56 B a frame
    early, late = sample(engine_bin, ["hil", "--frames", "10000000", "--period-us", "50", "--sim-cpu", str(cpu()),
                                      *QUIET], 1000, (2.0,))
    assert late["VmRSS"] <= early["VmRSS"] * 1.10, (early, late)


def test_latency_resident_size_bounded_by_the_window_series(engine_bin):
    """latency keeps one max per window (--window-s) per thread and for the merged
    series, 8 bytes a window each, and the merged window counts (wake-ups, latency sum,
    late, skipped: 32 bytes a window), bounded at 2^20 windows; nothing per cycle."""
    short, = sample(engine_bin, ["latency", "--duration-s", "100", "--interval-us", "100", "--cpus", str(cpu()),
                                 *QUIET], 10_000)
    long, = sample(engine_bin, ["latency", "--duration-s", "100000", "--interval-us", "100", "--cpus", str(cpu()),
                                *QUIET], 10_000)
    series_kib = (2 * 8 + 4 * 8) * (100000 - 100) / 1024   # thread + merged maxima, merged counts
    assert long["VmHWM"] - short["VmHWM"] <= series_kib * 1.2 + 512, (short, long)
