"""Microbenchmarks vs rt-tests (`python3 bench/micro_crosscheck.py`, root).

Where rt-tests has a counterpart of an engine microbenchmark, run both on the same
CPU, priority and pacing, interleaved for several rounds, and write a side-by-side
table into the section "## Microbenchmarks vs rt-tests" of docs/performance.md
(the other sections are left as they are). Also runs the whole part-A catalogue
once with its defaults and tabulates avg / p99 / max, so the section shows what
this machine gives.

Pairs (rt-tests: the receiver sleeps -i us between samples, and the two threads
share one priority; the engine is told to do the same with --pause-us and, for
message, --equal-priority):
  ptsematest  <-> shuffle --primitive sem    (futex hand-over: a plain mutex
                                              unlocked by the other thread / a sem)
  ptsematest  <-> shuffle --primitive mutex  (the same, with a PI mutex hand-over)
  svsematest  <-> shuffle --primitive sem    (SysV semop vs POSIX sem)
  pmqtest     <-> message --transport mq --equal-priority
sigwaittest (signals) has no engine counterpart; pi_stress is not installed here.
rt-tests report whole microseconds from gettimeofday; the engine's figures are ns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import load_text, write_section  # noqa: E402
from rtgauge.enginebin import engine_path  # noqa: E402

SECTION = "## Microbenchmarks vs rt-tests"
PRIO = 80

PAIRS = [
    ("ptsematest", ["shuffle", "--primitive", "sem"], "shuffle (sem)"),
    ("ptsematest", ["shuffle", "--primitive", "mutex"], "shuffle (PI mutex)"),
    ("svsematest", ["shuffle", "--primitive", "sem"], "shuffle (sem)"),
    ("pmqtest", ["message", "--transport", "mq", "--equal-priority"], "message (mq, equal priority)"),
]

CATALOGUE = [
    (["switch", "--threads", "2"], ["switch"]),
    (["switch", "--threads", "10"], ["switch"]),
    (["switch", "--threads", "128"], ["switch"]),
    (["switch", "--threads", "1000"], ["switch"]),
    (["preempt"], ["preempt"]),
    (["preempt", "--event", "timer", "--iterations", "1000"], ["preempt"]),
    (["shuffle"], ["shuffle"]),
    (["shuffle", "--primitive", "mutex"], ["shuffle"]),
    (["shuffle", "--primitive", "condvar"], ["shuffle"]),
    (["shuffle", "--primitive", "futex"], ["shuffle"]),
    (["message"], ["latency"]),
    (["message", "--transport", "pipe"], ["latency"]),
    (["sem"], ["create_used", "delete_used", "create_unused", "delete_unused", "acquire", "release",
               "acquire_contended", "release_contended"]),
    (["mutex"], ["acquire", "release", "acquire_contended", "release_contended"]),
    (["thread"], ["create_never_run", "delete_never_run", "create_run_terminate", "delete_run_terminate",
                  "create_run_block", "delete_run_block"]),
    (["tick"], ["gap"]),
    (["deadlock-break"], ["deadlock_break"]),
]


def rt_tests_round(tool: str, cpu: int, loops: int, interval_us: int) -> dict:
    """min/avg/max in us from the tool's --json file (receiver side)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        # the full path: svsematest derives its SysV key with ftok(argv[0])
        cmd = [shutil.which(tool) or tool, "-a", str(cpu), "-p", str(PRIO), "-i", str(interval_us), "-l", str(loops), "-q",
               f"--json={out}"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=loops * interval_us / 1e6 * 3 + 30)
        if p.returncode != 0 or not out.exists():
            raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
        doc = json.loads(out.read_text())
    r = doc["thread"]["0"]["receiver"]
    return {"min_us": float(r["min"]), "avg_us": float(r["avg"]), "max_us": float(r["max"])}


def engine_doc(engine: str, args: list[str], timeout: float = 120) -> dict:
    p = subprocess.run([engine, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def engine_round(engine: str, args: list[str], cpu: int, loops: int, interval_us: int) -> dict:
    metric = "latency" if args[0] == "message" else "shuffle"
    doc = engine_doc(engine, [*args, "--cpus", str(cpu), "--priority", str(PRIO), "--pause-us", str(interval_us),
                              "--iterations", str(loops)])
    m = doc["metrics"][metric]
    return {"min_us": m["min"] / 1000, "avg_us": m["avg"] / 1000, "max_us": m["max"] / 1000,
            "p99_us": m["p99"] / 1000}


def crosscheck(engine: str, cpu: int, rounds: int, loops: int, interval_us: int) -> list[dict]:
    rows = []
    for tool, args, label in PAIRS:
        if not shutil.which(tool):
            rows.append({"tool": tool, "label": label, "missing": True})
            continue
        ours, theirs = [], []
        for _ in range(rounds):
            theirs.append(rt_tests_round(tool, cpu, loops, interval_us))
            ours.append(engine_round(engine, args, cpu, loops, interval_us))
        rows.append({"tool": tool, "label": label, "ours": ours, "theirs": theirs})
    return rows


def catalogue(engine: str) -> list[tuple[str, str, dict]]:
    out = []
    for args, metrics in CATALOGUE:
        doc = engine_doc(engine, args)
        for name in metrics:
            out.append((" ".join(args), name, doc["metrics"][name]))
        if args[0] == "tick":
            m = doc["metrics"]
            per = doc["periodicity"]
            out.append(("tick", "gaps / stolen_fraction / dominant_period_ns",
                        {"text": f"{m['gaps']['value']} / {m['stolen_fraction']['value']:.4f} / "
                                 f"{m['dominant_period_ns']['value']:.0f} (tick {per.get('tick_period_ns')}, "
                                 f"is_tick {per.get('is_tick')})"}))
    return out


def med(rs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rs)


def render(rows, cat, args, cpu: int) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [SECTION, "",
             f"Measured {now} by `python3 bench/micro_crosscheck.py` on {platform.node()}, kernel "
             f"{platform.release()}, {os.cpu_count()} CPUs, {load_text()}; both tools pinned to CPU {cpu}, SCHED_FIFO {PRIO}, "
             f"{args.loops} samples a round, one sample every {args.interval_us} us, {args.rounds} rounds "
             "interleaved, medians over rounds. The machine is a shared VM: read ratios, not absolute values.",
             "",
             "| rt-tests | engine | rt-tests min / avg / max µs | engine min / avg / max µs | engine p99 µs | "
             "avg ratio engine/rt-tests |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("missing"):
            lines.append(f"| {r['tool']} | {r['label']} | not installed | | | |")
            continue
        o, t = r["ours"], r["theirs"]
        ratio = med(o, "avg_us") / med(t, "avg_us") if med(t, "avg_us") else float("nan")
        lines.append(f"| {r['tool']} | {r['label']} | {med(t, 'min_us'):.0f} / {med(t, 'avg_us'):.2f} / "
                     f"{med(t, 'max_us'):.0f} | {med(o, 'min_us'):.2f} / {med(o, 'avg_us'):.2f} / "
                     f"{med(o, 'max_us'):.1f} | {med(o, 'p99_us'):.2f} | {ratio:.2f} |")
    lines += ["", "Differences in method:", "",
              "- rt-tests time with gettimeofday (1 µs resolution, so their min is 1 or 2 and their average is "
              "the mean of whole microseconds); the engine uses CLOCK_MONOTONIC in ns.",
              "- ptsematest hands over a plain (non-PI) mutex that the *other* thread unlocks, which glibc "
              "turns into a futex wake; shuffle --primitive sem is the same futex wake/wait under the POSIX "
              "semaphore API, shuffle --primitive mutex an owner-to-waiter hand-over of a PI mutex "
              "(FUTEX_UNLOCK_PI / LOCK_PI through the kernel's rt_mutex), which costs more.",
              "- svsematest uses SysV semaphores (semop, always a system call, even without a waiter); "
              "shuffle uses POSIX semaphores (user space when there is no waiter).",
              "- pmqtest and ptsematest time one direction only (sender -> receiver) and both threads share "
              "one priority, so a sample spans the release, the releasing thread's own blocking call and the "
              "switch; the engine's shuffle times both directions the same way. message defaults to a "
              "receiver one priority higher (immediate preemption); --equal-priority, used here, matches "
              "pmqtest.",
              "- Both pace with a sleep in the receiver (-i / --pause-us), but not at the same place. In "
              "ptsematest and svsematest the thread that slept wakes the sender through a second, untimed "
              "lock and blocks; the sender takes t0 only after it has been switched in, so the timed "
              "hand-over runs warm. The engine's shuffle has one token and two symmetric threads: the one "
              "that slept takes t0 itself and its release and its own blocking acquire run cold, straight "
              "after the wake-up from the sleep. That, and the truncation of rt-tests' whole microseconds "
              "(about -0.5 µs on an average), is why shuffle reads about twice ptsematest/svsematest here. "
              "pmqtest and message --equal-priority --pause-us have the same structure (the sleeper's reply "
              "is the untimed wake-up), and agree.",
              "- Back to back (the engine's default, table below) the caches and the CPU stay warm and the "
              "figures are lower than paced ones.",
              "",
              "### The catalogue on this machine (defaults, one run each, idle apart from other users)",
              "",
              "| command | metric | count | avg ns | p99 ns | max ns |",
              "|---|---|---:|---:|---:|---:|"]
    for cmd, name, m in cat:
        if "text" in m:
            lines.append(f"| `{cmd}` | {name} | | {m['text']} | | |")
        else:
            lines.append(f"| `{cmd}` | {name} | {m['count']} | {m['avg']:.0f} | {m['p99']} | {m['max']} |")
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per pair (default 3)")
    ap.add_argument("--loops", type=int, default=2000, help="samples per round (default 2000)")
    ap.add_argument("--interval-us", type=int, default=1000, help="pacing of both tools (default 1000)")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    ap.add_argument("--no-write", action="store_true", help="print the section instead of writing it")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("micro_crosscheck: needs root (SCHED_FIFO for both tools); run it with sudo.", file=sys.stderr)
        return 2
    if not 1 <= args.rounds <= 50 or not 100 <= args.loops <= 1_000_000 or not 100 <= args.interval_us <= 100_000:
        print("micro_crosscheck: --rounds 1..50, --loops 100..1000000, --interval-us 100..100000.", file=sys.stderr)
        return 2
    engine = engine_path()
    cpu = max(os.sched_getaffinity(0))
    rows = crosscheck(engine, cpu, args.rounds, args.loops, args.interval_us)
    cat = catalogue(engine)
    text = render(rows, cat, args, cpu)
    if args.no_write:
        print(text)
    else:
        write_section(SECTION.removeprefix("## "), text.removeprefix(SECTION), args.doc)
        print(f"wrote {SECTION!r} in {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
