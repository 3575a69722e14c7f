"""A/A and A/B experiments of `rtgauge compare` with the default settings a user has
(docs/compare.md "Single runs", docs/performance.md "compare: A/A and A/B").

    .venv/bin/python bench/compare_aa.py collect --until 13:00   # measure (root; minutes to an hour)
    .venv/bin/python bench/compare_aa.py analyse                 # compare the stored runs, write the doc section

collect measures, one after the other until the given time (or --cycles), a cycle of:
the shipped quick profile, the shipped micro profile, and every --ab-every cycles the
quick profile again with a FIFO spinner (`rtgauge-engine spin`, priority 90, 3 ms every
30 ms) on the last allowed CPU, started beside the run: same profile, same condition
names. Every run is stored in one SQLite database (default experiments/compare.db,
not in git) and listed in a journal beside it (which profile, which arm), so the runs
can be analysed again with a later method.

analyse compares, with `rtgauge compare --json` and the default settings (one round,
alpha 0.05, no option):
- A/A: each quick run with the next quick run without the spinner, each micro run with
  the next micro run (consecutive pairs: with N runs, N-1 comparisons; neighbouring
  comparisons share a run, so they are not independent);
- A/B: each spinner run against the quick run just before it, with the gate
  `--fail-on 'p99_latency>+20%'`.
It prints the counts, and for the average and the missed deadlines of every latency job
their calls and which noise judged them (each run's own batches of per-window averages
and late periods, or the drift model where a run holds none: docs/compare.md); with
--write, it replaces the section in docs/performance.md.

A reduced scale (a check of the bench, not its result): `collect --cycles 2 --ab-every 1
--quick-profile bench/compare_aa_short.toml --micro-profile ""` (10 s latency idle runs,
no micro runs). Stored runs made elsewhere are analysed the same way after `import DIR...`
(one directory of engine documents per run, in the order they were measured; a directory
whose name starts with "spinner" is a spinner run, e.g. tests/data/compare/* or
tests/data/compare-windows/*, whose runs hold per-window averages and late periods).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

DEFAULT_DIR = ROOT / "experiments"
if not os.environ.get("RTGAUGE_ENGINE") and (ROOT / "build/engine/src/rtgauge-engine").exists():
    os.environ["RTGAUGE_ENGINE"] = str(ROOT / "build/engine/src/rtgauge-engine")   # the worktree's build
GATE = "p99_latency>+20%"
SPIN = ["--priority", "90", "--busy-us", "3000", "--period-us", "30000"]


SRC = ROOT   # collect --src: measure with a frozen copy of the package while this one is edited


def rtgauge(*args, timeout=3600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=SRC)


def last_run_id(db: Path) -> int | None:
    if not db.exists():
        return None
    with sqlite3.connect(db) as c:
        row = c.execute("select max(id) from runs").fetchone()
    return row[0] if row else None


def measure(db: Path, journal: Path, profile: str, arm: str, extra: tuple[str, ...] = ()) -> dict:
    """One run of PROFILE stored in DB (with the spinner beside it for a spinner arm),
    listed in the journal; returns the journal's row (its "run" is None when nothing
    was stored, with the run's last line of error as "error")."""
    from rtgauge.enginebin import engine_path
    from rtgauge.errors import UserError
    before = last_run_id(db)
    spinner = None
    cpu = max(os.sched_getaffinity(0))
    if arm.startswith("spinner"):
        try:
            engine = engine_path()
        except UserError as e:
            return {"run": None, "profile": profile, "arm": arm, "status": 2, "error": str(e)}
        spinner = subprocess.Popen([engine, "spin", "--cpu", str(cpu), *SPIN, "--duration-s", "900"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.time()
    try:
        p = rtgauge("run", "--profile", profile, "--db", f"sqlite:///{db}", "--no-report", *extra)
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.wait(timeout=60)
    after = last_run_id(db)
    row = {"run": after if after != before else None, "profile": profile, "arm": arm,
           "status": p.returncode, "started": datetime.fromtimestamp(start, timezone.utc).isoformat(),
           "seconds": round(time.time() - start, 1), **({"spinner_cpu": cpu} if spinner else {}),
           **({"rounds": int(extra[extra.index("--rounds") + 1])} if "--rounds" in extra else {})}
    with journal.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)
    if row["run"] is None:
        lines = (p.stderr or p.stdout).strip().splitlines()
        row["error"] = lines[-1] if lines else None
    return row


def where(args) -> tuple[Path, Path]:
    """The database and journal of the experiment (made if missing); --src taken."""
    global SRC
    if getattr(args, "src", None):
        SRC = Path(args.src)
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    return out / "compare.db", out / "journal.jsonl"


def collect(args) -> int:
    db, journal = where(args)
    deadline = None
    if args.until:
        h, m = (int(x) for x in args.until.split(":"))
        now = datetime.now()
        deadline = now.replace(hour=h, minute=m, second=0, microsecond=0).timestamp()
    cycle = 0
    while (args.cycles is None or cycle < args.cycles) and (deadline is None or time.time() < deadline):
        cycle += 1
        plan = [(args.quick_profile, "plain")] + ([(args.micro_profile, "plain")] if args.micro_profile else [])
        if args.ab_every and cycle % args.ab_every == 0:
            plan.append((args.quick_profile, "spinner"))
        for profile, arm in plan:
            if deadline is not None and time.time() > deadline:
                break
            row = measure(db, journal, profile, arm)
            if row["run"] is None:
                # nothing stored (an engine or a profile missing, no privilege): every
                # later run would fail the same way, in seconds, as the first did
                print(f"compare_aa: the {arm} run of {profile} stored nothing (exit status {row['status']}): "
                      f"{row.get('error') or 'see rtgauge run'}; collection stopped", file=sys.stderr)
                return 2
    return 0


def import_runs(args) -> int:
    """Stored runs made elsewhere (one directory of engine documents each, in the order
    they were measured) into the experiment's database and journal, as quick runs:
    a directory named spinner* is a spinner run, any other a plain one."""
    db, journal = where(args)
    for d in args.runs:
        before = last_run_id(db)
        p = rtgauge("import", str(Path(d).resolve()), "--db", f"sqlite:///{db}")
        after = last_run_id(db)
        row = {"run": after if after != before else None, "profile": "quick",
               "arm": "spinner" if Path(d).name.startswith("spinner") else "plain", "status": p.returncode,
               "started": datetime.now(timezone.utc).isoformat(), "seconds": 0.0, "imported": str(d)}
        with journal.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    return 0


def ab_rounds(args) -> int:
    """A/B the way compare advises when one round cannot decide: the quick profile with
    --rounds N, without then with the spinner (arms plain-rounds, spinner-rounds)."""
    db, journal = where(args)
    for _ in range(args.pairs):
        for arm in ("plain-rounds", "spinner-rounds"):
            measure(db, journal, "quick", arm, ("--rounds", str(args.rounds)))
    return 0


def compare(db: Path, a: int, b: int, *rules: str) -> tuple[int, dict]:
    args = ["compare", str(a), str(b), "--db", f"sqlite:///{db}", "--json"]
    for r in rules:
        args += ["--fail-on", r]
    p = rtgauge(*args, timeout=600)
    return p.returncode, json.loads(p.stdout)


def called(doc: dict) -> list[str]:
    return [f"{f['label']} ({f['call']}, q={f['q_value']:.2g})" for f in doc["comparisons"][0]["figures"]
            if f["call"] in ("worse", "better")]


def drift_pairs(db: Path, pairs: list[tuple[int, int]]) -> dict[str, list[float]]:
    """Per family, the log ratio of every figure between the two runs of each A/A pair."""
    from rtgauge.analysis.compare.regress import figures
    from rtgauge.store import open_store

    out: dict[str, list[float]] = {}
    with open_store(f"sqlite:///{db}") as store:
        runs = {i: figures(store.get_run(i)) for pair in pairs for i in pair}
    for a, b in pairs:
        fa, fb = runs[a], runs[b]
        for key, f in fb.items():
            g = fa.get(key)
            if g is None or f.family not in DRIFT_FAMILIES:
                continue
            if f.family == "misses":
                (ka, na), (kb, nb) = g.events, f.events
                va, vb = (ka + 0.5) / na, (kb + 0.5) / nb
            else:
                if len(f.rounds) != 1 or len(g.rounds) != 1:
                    continue
                va, vb = g.rounds[0], f.rounds[0]
            if va > 0 and vb > 0:
                out.setdefault(f.family, []).append(math.log(vb / va))
    return out


DRIFT_FAMILIES = ("avg_latency", "p99_latency", "max_latency", "avg_latency_stall_free", "micro_avg", "micro_p99",
                  "micro_max", "micro_avg_stall_free", "misses")


def fit_drift(ratios: list[float], family: str = "") -> tuple[float, float]:
    """The run-to-run drift of one family: a Student t centred on 0 fitted by maximum
    likelihood to the log ratios of A/A pairs. Its degrees of freedom are the free
    fit's, rounded down and kept within 2..10 (heavy tails are the point; a few dozen
    ratios cannot show a tail lighter than t10); its scale is refitted with that df.
    The ratio of two runs carries the drift of both, so the drift of one run is the
    scale over sqrt(2). (tau, df)"""
    import numpy as np
    from scipy import stats
    x = np.asarray(ratios, float)
    free_df, _, _ = stats.t.fit(x, floc=0)
    df = float(min(max(math.floor(free_df), 2), 10))
    _, _, scale = stats.t.fit(x, fdf=df, floc=0)
    return float(scale / math.sqrt(2)), df


def plain_pairs(rows: list[dict], profile: str) -> list[tuple[int, int]]:
    plain = [r["run"] for r in rows if r["profile"] == profile and r["arm"] == "plain"]
    return list(zip(plain, plain[1:]))


def drift(args) -> int:
    out = Path(args.dir)
    db, journal = out / "compare.db", out / "journal.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("run") and r.get("status") == 0]
    pairs = plain_pairs(rows, "quick") + plain_pairs(rows, "micro")
    if args.fit_before:
        pairs = [(a, b) for a, b in pairs if b < args.fit_before]
    ratios = drift_pairs(db, pairs)
    print(f"{len(pairs)} A/A pairs")
    for fam in DRIFT_FAMILIES:
        if fam in ratios and len(ratios[fam]) >= 5:
            tau, df = fit_drift(ratios[fam], fam)
            x = sorted(abs(v) for v in ratios[fam])
            print(f"{fam:24} n={len(x):4} tau={tau:.3f} df={df:g} median|d|={x[len(x) // 2]:.3f} max|d|={x[-1]:.3f}")
    return 0


AVG_MISSES = ("avg_latency", "misses")     # the figures whose single-round noise is batches or the drift


def noise_of(method: str | None) -> str:
    """Which noise between runs judged a single-round figure, from its method."""
    method = method or ""
    if "own between-batch spread" in method:
        return "batches"
    return "drift" if "drift" in method else "rounds" if "rounds" in method else "other"


def avg_misses(changes) -> list[str]:
    """The calls of every latency job's average and missed deadlines, with the noise that
    judged each: 'latency@idle avg latency: no significant difference (batches, q=1)'."""
    return [f"{c.figure.label}: {c.call} ({noise_of(c.result.method if c.result else None)}"
            + (f", q={c.q_value:.2g})" if c.q_value is not None else ")")
            for c in changes if c.figure.family in AVG_MISSES]


def aa_calls(db: Path, pairs: list[tuple[int, int]], detail: dict | None = None) \
        -> list[tuple[int, int, int, list[str]]]:
    """Each A/A pair compared with the default settings (compare_runs in this process,
    the same statistics as `rtgauge compare`): (a, b, figures, called figures); detail,
    when given, gets (a, b) -> the average's and missed deadlines' calls (avg_misses)."""
    from rtgauge.analysis.compare.regress import BETTER, WORSE, compare_runs
    from rtgauge.store import open_store

    out = []
    with open_store(f"sqlite:///{db}") as store:
        for a, b in pairs:
            changes = compare_runs(store.get_run(a), store.get_run(b))
            called = [f"{c.figure.label} ({c.call}, q={c.q_value:.2g})" for c in changes if c.call in (WORSE, BETTER)]
            out.append((a, b, len(changes), called))
            if detail is not None:
                detail[(a, b)] = [(c.figure.family, c.call, noise_of(c.result.method if c.result else None))
                                  for c in changes if c.figure.family in AVG_MISSES]
                for text in avg_misses(changes):
                    print(f"  {a} vs {b}: {text}", flush=True)
    return out


def analyse(args) -> int:
    from rtgauge.analysis.compare import noise

    out = Path(args.dir)
    db, journal = out / "compare.db", out / "journal.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("run") and r.get("status") == 0]
    for r in rows:      # a profile given by path (a reduced scale) counts as its kind
        r["profile"] = "micro" if "micro" in Path(r["profile"]).stem else "quick"
    lines = []
    counts = {"ab": sum(1 for r in rows if r["arm"] == "spinner"),
              "ab_rounds": sum(1 for r in rows if r["arm"] == "spinner-rounds")}
    for profile in ("quick", "micro"):
        pairs = plain_pairs(rows, profile)
        counts[profile] = len(pairs)
        if not pairs:           # not collected (collect --micro-profile ''): no row for it
            continue
        detail: dict = {}
        results = aa_calls(db, pairs, detail)
        with_call = sum(bool(c) for *_, c in results)
        for a, b, n, c in results:
            print(f"A/A {profile} {a} vs {b}: {len(c)} called of {n}" + (f": {'; '.join(c)}" if c else ""), flush=True)
        figures = results[0][2] if results else 0
        lines.append(f"| A/A {profile}, default compare | {len(pairs)} | {len(pairs) - with_call} of {len(pairs)} "
                     f"without a call (about {figures} figures each) |")
        for fam, word in (("avg_latency", "average"), ("misses", "missed deadlines")):
            got = [(call, how) for calls in detail.values() for f, call, how in calls if f == fam]
            if not got:
                continue
            same = sum(call == "no significant difference" for call, _ in got)
            hows = ", ".join(f"{n} {how}" for how, n in sorted({h: sum(x == h for _, x in got) for _, h in got}.items()))
            print(f"A/A {profile} {word}: {same} of {len(got)} without a call (noise: {hows})", flush=True)
            lines.append(f"| A/A {profile}, default compare: latency {word} | {len(got)} figures | {same} of "
                         f"{len(got)} without a call (noise between runs: {hows}) |")
        if args.fit_before:
            later = [r for r in results if r[1] >= args.fit_before]
            lines.append(f"| A/A {profile}, only the pairs not used to fit the shipped drift (fitted to runs before "
                         f"{args.fit_before}) | {len(later)} | {sum(not c for *_, c in later)} of {len(later)} "
                         "without a call |")
        for a, b, n, c in results:
            if c:
                lines.append(f"| | runs {a} → {b} | {'; '.join(c)} |")
        # out of sample: the drift fitted to the first half of the pairs, tested on the second
        half = len(pairs) // 2
        if half >= 3:
            fitted = {fam: fit_drift(r, fam) for fam, r in drift_pairs(db, pairs[:half]).items() if len(r) >= 5}
            shipped, shipped_df = dict(noise.DRIFT), dict(noise.DRIFT_DF_BY_FAMILY)
            noise.DRIFT.update({fam: tau for fam, (tau, _) in fitted.items()})
            noise.DRIFT_DF_BY_FAMILY.update({fam: df for fam, (_, df) in fitted.items()})
            try:
                later = aa_calls(db, pairs[half:])
            finally:
                noise.DRIFT.clear()
                noise.DRIFT.update(shipped)
                noise.DRIFT_DF_BY_FAMILY.clear()
                noise.DRIFT_DF_BY_FAMILY.update(shipped_df)
            calls = sum(bool(c) for *_, c in later)
            print(f"A/A {profile}, drift fitted to the first {half} pairs, on the other {len(later)}: "
                  f"{calls} with a call", flush=True)
            lines.append(f"| A/A {profile}, drift fitted to the first {half} pairs only | {len(later)} (the others) | "
                         f"{len(later) - calls} of {len(later)} without a call |")
    for i, r in enumerate(rows):
        if r["arm"] not in ("spinner", "spinner-rounds"):
            continue
        base_arm = "plain" if r["arm"] == "spinner" else "plain-rounds"
        base = next((q["run"] for q in reversed(rows[:i]) if q["profile"] == "quick" and q["arm"] == base_arm), None)
        if base is None:
            continue
        status, doc = compare(db, base, r["run"], GATE)
        figs = {f["key"]: f for f in doc["comparisons"][0]["figures"]}
        tail = [f"{f['label']}: {f['call']}" + (f" (q={f['q_value']:.2g})" if f["q_value"] is not None else "")
                for k, f in figs.items() if k.startswith("lat:latency@") and k.rsplit(":", 1)[1] in ("p99", "max")]
        tail += [f"{f['label']}: {f['call']} ({noise_of(f['method'])}"
                 + (f", q={f['q_value']:.2g})" if f["q_value"] is not None else ")")
                 for k, f in figs.items() if k.startswith("lat:latency@") and f["family"] in AVG_MISSES]
        worse = [f["label"] for f in figs.values() if f["call"] == "worse"]
        tail.append(f"called worse: {len(worse)} of {len(figs)} figures" + (f" ({', '.join(worse)})" if worse else ""))
        gate = doc.get("gate")
        p99 = figs.get("lat:latency@idle:p99", {})
        advice = p99.get("detail", {}).get("to_decide") if p99.get("call") != "worse" else None
        what = "A/B spinner, one round a side" if r["arm"] == "spinner" else \
            f"A/B spinner, `--rounds {r.get('rounds', 3)}` a side"
        print(f"{what} {base} vs {r['run']}: exit {status}, gate {gate}; {'; '.join(tail)}"
              + (f"; advice: {advice}" if advice and r["arm"] == "spinner" else ""), flush=True)
        lines.append(f"| {what} | runs {base} → {r['run']} | gate `{GATE}`: {gate} (exit {status}); "
                     f"{'; '.join(tail)}" + (f"; compare's advice: {advice}" if advice and r["arm"] == "spinner"
                                              else "") + " |")
    all_pairs = plain_pairs(rows, "quick") + plain_pairs(rows, "micro")
    fit_pairs = [(a, b) for a, b in all_pairs if not args.fit_before or b < args.fit_before]
    drift_rows = []
    fitted, everything = drift_pairs(db, fit_pairs), drift_pairs(db, all_pairs)
    for fam in DRIFT_FAMILIES:
        if len(fitted.get(fam, [])) >= 5 and len(everything.get(fam, [])) >= 5:
            (t1, d1), (t2, d2) = fit_drift(fitted[fam], fam), fit_drift(everything[fam], fam)
            x = sorted(abs(v) for v in everything[fam])
            drift_rows.append(f"| {fam} | {noise.DRIFT.get(fam)} ({noise.drift_df(fam):g}) | {t1:.3f} ({d1:g}) | "
                              f"{t2:.3f} ({d2:g}) | {len(x)} | {x[len(x) // 2]:.2f} | {x[-1]:.2f} |")
    if args.write:
        from perfdoc import write_section
        date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        span = [r["started"][:16].replace("T", " ") for r in rows]
        body = (f"Measured {date} ({span[0]} to {span[-1]} UTC) on this 2-vCPU VM ({args.machine}), default "
                f"settings (one round, alpha 0.05). Commands: {args.collected}, then `.venv/bin/python "
                f"bench/compare_aa.py analyse --write` (and `... drift` for the fitted drift). A/A pairs are consecutive runs of the same "
                f"shipped profile (neighbouring pairs share a run, so they are not independent repetitions). "
                f"Done: {counts['quick']} A/A pairs of quick, {counts['micro']} of micro, {counts['ab']} A/B pairs "
                f"with one round a side and {counts['ab_rounds']} with rounds. {args.shipped}\n\n"
                "| experiment | comparisons | result |\n|---|---|---|\n" + "\n".join(lines) + "\n\n"
                "The run-to-run drift, log(figure of run B / figure of run A) of every figure of a family over "
                "the A/A pairs: τ (t degrees of freedom) shipped in rtgauge/analysis/compare/noise.py, fitted to the "
                "pairs used for it, and refitted to every pair; |d| is the absolute log ratio.\n\n"
                "| family | shipped τ (df) | fitted (df) | all pairs (df) | ratios | median abs(d) | max abs(d) |\n"
                "|---|---|---|---|---|---|---|\n" + "\n".join(drift_rows) + "\n")
        write_section("compare: A/A and A/B with the default settings", body)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=str(DEFAULT_DIR), help="where the database and journal live")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="measure the runs")
    c.add_argument("--until", help="stop starting runs after HH:MM (local time)")
    c.add_argument("--cycles", type=int, default=None, help="number of quick+micro cycles")
    c.add_argument("--src", help="directory holding the rtgauge package to measure with (default: this one)")
    c.add_argument("--ab-every", type=int, default=4, help="a spinner run every N cycles (0: none)")
    c.add_argument("--quick-profile", default="quick", help="the latency profile measured (default: quick)")
    c.add_argument("--micro-profile", default="micro", help="the microbenchmark profile ('' for none)")
    c.set_defaults(func=collect)
    i = sub.add_parser("import", help="stored runs made elsewhere, in the order they were measured")
    i.add_argument("runs", nargs="+", help="a directory of engine documents per run (spinner*: a spinner run)")
    i.set_defaults(func=import_runs)
    r = sub.add_parser("ab-rounds", help="A/B with rounds: the quick profile with --rounds N, without then with "
                       "the spinner")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--pairs", type=int, default=1)
    r.add_argument("--src", help="directory holding the rtgauge package to measure with (default: this one)")
    r.set_defaults(func=ab_rounds)
    a = sub.add_parser("analyse", help="compare the stored runs")
    a.add_argument("--write", action="store_true", help="replace the section of docs/performance.md")
    a.add_argument("--machine", default="shared with other engineers' jobs",
                   help="what else ran on the machine meanwhile, for the written section")
    a.add_argument("--collected", default="`sudo .venv/bin/python bench/compare_aa.py collect --until HH:MM`",
                   help="how the runs were collected (the commands), for the written section")
    a.add_argument("--shipped", default="",
                   help="a sentence on where the shipped drift model (rtgauge/analysis/compare/noise.py) came from")
    a.add_argument("--fit-before", type=int, default=None, metavar="RUN",
                   help="the shipped drift was fitted to pairs of runs before RUN: count the other pairs apart")
    a.set_defaults(func=analyse)
    d = sub.add_parser("drift", help="fit the run-to-run drift of each family to the A/A pairs")
    d.add_argument("--fit-before", type=int, default=None, metavar="RUN", help="only pairs of runs before RUN")
    d.set_defaults(func=drift)
    args = ap.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
