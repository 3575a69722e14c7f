"""Start-up time and memory of `rtgauge --help`, of a command's own --help and of a usage
error against a bare `python -c pass` (`python3 bench/startup.py`): the target, for each
of them, is at most 10 times the bare interpreter's time (docs/performance.md "Start-up";
a command's --help loads its parser alone, docs/design.md "Commands load at dispatch"). Rounds interleave the commands, so a change of
the machine's load falls on all of them alike; medians and the median of per-round
ratios are reported. `--no-write` leaves docs/performance.md as it is."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from perfdoc import write_section  # noqa: E402

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "rtgauge --help": [sys.executable, "-m", "rtgauge", "--help"],
    "rtgauge show --help": [sys.executable, "-m", "rtgauge", "show", "--help"],
    "rtgauge run --help": [sys.executable, "-m", "rtgauge", "run", "--help"],
    "rtgauge shwo (a usage error)": [sys.executable, "-m", "rtgauge", "shwo"],
}
TARGET_RATIO = 10


def once(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and the child's peak resident MB of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) / 1024


def measure(rounds: int) -> dict[str, dict]:
    times = {name: [] for name in COMMANDS}
    rss = {name: 0.0 for name in COMMANDS}
    for _ in range(rounds):
        for name, argv in COMMANDS.items():
            t, mb = once(argv)
            times[name].append(t)
            rss[name] = mb      # ru_maxrss of children is a running maximum: read per command below
    # a clean peak per command: one more run each in its own process group of children
    for name, argv in COMMANDS.items():
        code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
                "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
        rss[name] = int(out.stdout.strip() or 0) / 1024
    bare = times["python -c pass"]
    return {name: {"median_ms": statistics.median(ts) * 1e3,
                   "ratio": statistics.median(t / b for t, b in zip(ts, bare)),
                   "rss_mb": rss[name]} for name, ts in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    result = measure(a.rounds)
    lines = ["| command | median ms | × python -c pass (median of per-round ratios) | peak RSS MB |",
             "|---|---|---|---|"]
    for name, r in result.items():
        lines.append(f"| `{name}` | {r['median_ms']:.0f} | {r['ratio']:.1f} | {r['rss_mb']:.0f} |")
    ratio = result["rtgauge --help"]["ratio"]
    worst = max((r["ratio"], name) for name, r in result.items() if name.startswith("rtgauge"))
    verdict = "within" if worst[0] <= TARGET_RATIO else "OVER"
    body = (f"Measured {date.today().isoformat()} with `python3 bench/startup.py --rounds {a.rounds}` "
            f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.0f} at the end): medians of {a.rounds} interleaved rounds.\n\n"
            + "\n".join(lines)
            + f"\n\n`rtgauge --help` takes {ratio:.1f}× a bare interpreter's start, the slowest of the rows "
            f"(`{worst[1]}`) {worst[0]:.1f}×: {verdict} the target of {TARGET_RATIO}×. Help and usage errors "
            "import no numpy, scipy, SQLAlchemy or rich (tests/test_cli_startup.py checks it structurally).")
    print(body)
    if not a.no_write:
        write_section("Start-up", body)
    return 0 if worst[0] <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
