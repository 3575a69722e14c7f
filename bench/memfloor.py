"""Benchmark: the tire model's fast solver against its memory traffic alone
(`python3 bench/memfloor.py`). bench/memfloor.c, compiled here with the engine's
optimisation level, does the solver's reads and writes without its arithmetic (the
state as a structure of arrays, each node's opposite at ± n/2, in tiles as the solver
goes: 96 bytes a node and step) and, for scale, a plain copy of the same size. The
three are run in interleaved rounds on one thread (paired: round i of each is next to
round i of the others, so the machine's drift pairs out). Writes the section
"## Memory-bandwidth floor" of docs/performance.md."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import paired_shift, write_section  # noqa: E402
from rtgauge.enginebin import engine_path  # noqa: E402

MASSES = 1_000_000
BYTES_PER_MASS_STEP = 96


def kernel(exe: str, mode: str, passes: int) -> float:
    """ns per mass of the best of `passes` passes (the floor is what the memory can do)."""
    p = subprocess.run([exe, mode, str(MASSES), str(passes)], capture_output=True, text=True, timeout=300,
                       check=True)
    return min(float(line.split()[0]) for line in p.stdout.splitlines())


def solver(steps: int) -> float:
    p = subprocess.run([engine_path(), "tire", "--mode", "realfast", "--solver", "fast", "--threads", "1",
                        "--masses", str(MASSES), "--steps", str(steps), "--policy", "fifo"],
                       capture_output=True, text=True, timeout=600)
    doc = json.loads(p.stdout)
    if not doc.get("ok"):
        raise SystemExit(f"engine failed: {doc.get('error')}")
    return doc["metrics"]["ts"]["min"] / MASSES       # the best step, like the kernels' best pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--passes", type=int, default=5, help="passes of a kernel per round (its best counts)")
    ap.add_argument("--steps", type=int, default=20, help="solver steps per round (its best counts)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "performance.md"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtgauge-memfloor-") as tmp:
        exe = str(Path(tmp) / "memfloor")
        subprocess.run(["cc", "-O3", "-Wall", "-o", exe, str(ROOT / "bench" / "memfloor.c")], check=True)
        copy, traffic, fast = [], [], []
        for r in range(a.rounds):
            copy.append(kernel(exe, "copy", a.passes))
            traffic.append(kernel(exe, "tire", a.passes))
            fast.append(solver(a.steps))
            print(f"round {r + 1}: copy {copy[-1]:.2f}, traffic {traffic[-1]:.2f}, solver {fast[-1]:.2f} "
                  "ns per mass", flush=True)
    # the floor: the solver's 96 bytes at the best bandwidth a kernel that only moves memory reached
    # in that round (copy or the solver's own pattern), paired by round
    floors = [BYTES_PER_MASS_STEP / max(64 / c, BYTES_PER_MASS_STEP / t) for c, t in zip(copy, traffic)]
    shift = paired_shift(fast, floors, ratio=True)
    ratio = shift["median"]
    interval = "" if shift["low"] is None else f" (95 % interval {shift['low']:.2f}–{shift['high']:.2f})"
    med = {k: statistics.median(v) for k, v in (("copy", copy), ("traffic", traffic), ("fast", fast),
                                                ("floor", floors))}
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    lines = [
        f"Measured {now} by `python3 bench/memfloor.py` on {platform.node()}, kernel {platform.release()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} when it ended (a shared VM: read ratios). One thread, "
        f"{MASSES:,} masses (the state is 4 arrays of {MASSES:,} doubles, read and written: 64 MiB); "
        f"{a.rounds} interleaved rounds, each figure the best of its round ({a.passes} kernel passes, "
        f"{a.steps} solver steps).",
        "",
        "| what | ns per mass (median of rounds) | bytes a mass | GB/s |",
        "|---|---:|---:|---:|",
        f"| copy of 64 MiB (one stream in, one out) | {med['copy']:.2f} | 64 | {64 / med['copy']:.2f} |",
        f"| the solver's traffic alone (bench/memfloor.c `tire`) | {med['traffic']:.2f} | {BYTES_PER_MASS_STEP} | "
        f"{BYTES_PER_MASS_STEP / med['traffic']:.2f} |",
        f"| the fast solver, one thread (engine `tire --mode realfast`) | {med['fast']:.2f} | "
        f"{BYTES_PER_MASS_STEP} | {BYTES_PER_MASS_STEP / med['fast']:.2f} |",
        "",
        f"The floor: the solver's {BYTES_PER_MASS_STEP} bytes a mass at the best bandwidth a kernel that only "
        f"moves memory reached in the same round: median {med['floor']:.2f} ns per mass. The solver takes "
        f"{ratio:.2f}× that floor{interval}, paired by round. "
        + ("At or below 1.1: the solver moves its bytes as fast as kernels that do nothing else, so at a "
           "million masses it is memory-bound on this machine and its arithmetic is hidden under the loads. "
           "(Below 1: its own tiled, vectorised loops reach more bandwidth than these simple kernels, and it "
           "may find part of the opposite half still in the last-level cache; the floor is then the "
           "solver's own speed.)"
           if ratio <= 1.1 else
           "Above 1.1: the arithmetic costs more than the memory traffic; the solver is compute-bound here."),
        "",
        "A copy counts 64 bytes a mass (the same 64 MiB in and out); the solver's traffic counts 96 (the "
        "state read at each node and at its opposite, the new state written). Writes also cost a read of "
        "the line they fill (not counted in either), so the bandwidths are lower bounds of the memory's.",
    ]
    write_section("Memory-bandwidth floor", "\n".join(lines), Path(a.out))
    print(f"wrote the Memory-bandwidth floor section of {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
