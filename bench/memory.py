"""Resident memory of a run at two run lengths (`python3 bench/memory.py`).

`hil` at 10^5 and 10^7 frames and `latency` at 10 s and 10^5 s: each run is
started, its VmHWM / VmRSS read from /proc after --at-s seconds (every buffer is
allocated and touched before the first cycle, and locked by mlockall, so this is
what the run holds), then stopped with SIGTERM. With --engine-before PATH also the
same figures for another build (e.g. the engine before a change), side by side,
each case run by both builds one after the other. The section "## Resident memory"
of docs/performance.md is rewritten unless --no-write.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import write_section  # noqa: E402
from rtgauge.enginebin import engine_path  # noqa: E402

SECTION = "Resident memory"
CASES = [
    ("hil", "10^5 frames", ["hil", "--frames", "100000", "--period-us", "1000"]),
    ("hil", "10^7 frames", ["hil", "--frames", "10000000", "--period-us", "1000"]),
    ("latency", "10 s", ["latency", "--duration-s", "10", "--threads", "2"]),
    ("latency", "10^5 s", ["latency", "--duration-s", "100000", "--threads", "2"]),
]


def resident(exe: str, args: list[str], at_s: float) -> dict[str, int]:
    p = subprocess.Popen([exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(at_s)
        if p.poll() is not None:
            raise SystemExit(f"{exe} {' '.join(args)} ended early: {p.stderr.read().strip()}")
        out = {}
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    out[key] = int(rest.split()[0])
        return out
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--at-s", type=float, default=1.5, help="read the memory this long after the start")
    ap.add_argument("--engine-before", "--engine", dest="engine", metavar="PATH",
                    help="another engine build to compare with (e.g. the previous one)")
    ap.add_argument("--before-label", default="before", help="what --engine-before is (its column's title)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/memory.py needs root (SCHED_FIFO, mlockall).", file=sys.stderr)
        return 2
    if a.engine and not os.access(a.engine, os.X_OK):
        print(f"--engine-before {a.engine} is not an executable engine; build it first.", file=sys.stderr)
        return 2
    builds = [("this build", engine_path())] + ([(a.before_label, a.engine)] if a.engine else [])
    head = "| test | run length | " + " | ".join(f"VmHWM, {name} (MB)" for name, _ in builds) + " |"
    lines = [
        f"`python3 bench/memory.py{' --engine-before ...' if a.engine else ''}` "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, kernel "
        f"{platform.release()}, {os.cpu_count()} CPUs, run on CPUs {sorted(os.sched_getaffinity(0))}): "
        f"high-water resident size {a.at_s} s into a run "
        "(SCHED_FIFO 80, mlockall; every buffer is allocated and touched before the first cycle), "
        "then SIGTERM.",
        "",
        head,
        "|---|---|" + "---|" * len(builds),
    ]
    for test, length, args in CASES:
        cells = [f"{resident(exe, args, a.at_s)['VmHWM'] / 1024:.1f}" for _, exe in builds]
        lines.append(f"| {test} | {length} | " + " | ".join(cells) + " |")
    lines += ["", "hil keeps nothing per frame (the cycle driver's ring and fixed histograms); latency keeps "
              "one maximum per window (`--window-s`, 1 s) per thread and for the merged series: 8 bytes "
              "a second each, at most 2^20 windows."]
    body = "\n".join(lines)
    print(body)
    if not a.no_write:
        write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
