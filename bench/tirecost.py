"""The tire cost equation tested by prediction (`python3 bench/tirecost.py`, root).

`--solver locked` (default) or `paper` (the study's structure: in place, no
barrier), realtime at 10 ms, 100 steps, --cost-every 4: masses 800, 3200,
12800 x threads 1, 2, 4, per policy (FIFO, fair), in interleaved rounds. The
constants measured at 3200 masses predict the other sizes' median step; the
FIFO constants also predict the fair runs. Prints the constants, Tswitch (in the
runs and from the switch microbenchmark) and every prediction with its error, for
the median step time and for its 99th percentile (docs/tire.md "Cost equation").
Target: FIFO constants predict the FIFO runs' median step with a median error of at
most 20 % (exit status 1 when missed); a timing figure, so it is checked here, not in
the tests (tests/test_tire_cost.py checks what load cannot break)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from rtgauge.analysis.studies import tirecost  # noqa: E402

SIZES, THREADS, TRAIN = (800, 3200, 12800), (1, 2, 4), 3200
TARGET = 0.20


def engine_doc(engine: str, *args: str) -> dict:
    out = subprocess.run([engine, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default=os.environ.get("RTGAUGE_ENGINE", "build/engine/src/rtgauge-engine"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--solver", choices=("locked", "paper"), default="locked")
    args = ap.parse_args()
    lock = ["--lock", "sem"] if args.solver == "paper" else []
    sw = engine_doc(args.engine, "switch", "--iterations", "20000", "--policy", "fifo")["metrics"]["switch"]["p50"]
    pts = {"fifo": [], "other": []}
    for _ in range(args.rounds):
        for pol in pts:
            for n in SIZES:
                for k in THREADS:
                    pts[pol].append(tirecost.cost_point(engine_doc(
                        args.engine, "tire", "--mode", "realtime", "--period-ms", "10", "--steps", "100",
                        "--masses", str(n), "--threads", str(k), "--policy", pol, "--cost-every", "4",
                        "--solver", args.solver, *lock)))
    cases = [(pol, pol) for pol in pts] + [("fifo", "other")]
    missed = False
    for train_pol, held_pol in cases:
        train = [p for p in pts[train_pol] if p.masses == TRAIN]
        held = [p for p in pts[held_pol] if p.masses != TRAIN]
        ev = tirecost.evaluate(train, held, sw)
        c = ev["constants"]
        print(f"constants from {train_pol} at {TRAIN} masses, predicting {held_pol}: "
              f"Tspring {c['Tspring']['median']:.2f} ns, Tmass {c['Tmass']['median']:.2f} ns, "
              f"Tipc {c['Tipc']['median']:.2f} ns, Tswitch {ev['tswitch_ns'] / 1e3:.1f} us in the runs "
              f"({sw / 1e3:.2f} us microbenchmark): median error {ev['median_error']:.1%} "
              f"(microbenchmark Tswitch: {ev['median_error_micro']:.1%}); p99 (tail factor "
              f"{ev['tail_factor']:.2f}): median error {ev['median_error_p99']:.1%}")
        for r in ev["predictions"]:
            print(f"   n={r['masses']:>6} threads={r['threads']} Nswitch={r['nswitch']:5.2f} Nwait={r['nwait']:5.2f} measured "
                  f"{r['measured_ns'] / 1e3:8.1f} us predicted {r['predicted_ns'] / 1e3:8.1f} us "
                  f"error {r['error']:6.1%}; p99 measured {r['measured_p99_ns'] / 1e3:8.1f} us predicted "
                  f"{r['predicted_p99_ns'] / 1e3:8.1f} us error {r['p99_error']:6.1%}")
        if (train_pol, held_pol) == ("fifo", "fifo"):
            missed = ev["median_error"] > TARGET
            print(f"target: FIFO median error <= {TARGET:.0%}: {'MISSED' if missed else 'met'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
