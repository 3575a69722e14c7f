"""The tire cost equation with its constants measured by the solver itself
(docs/tire.md "Cost equation"), tested by prediction on real engine runs:
constants from some configurations predict the step time of the others."""

from __future__ import annotations

import math

import pytest

from rtgauge.analysis.studies import tirecost
from tests.conftest import cli, needs_root

pytestmark = pytest.mark.alone

SIZES = (800, 3200, 12800)
THREADS = (1, 2, 4)
TRAIN_SIZE = 3200


def tire_doc(run_engine, masses: int, threads: int, policy: str, *extra: str, steps: int = 100) -> dict:
    # a 4 ms period: the largest step here (12,800 masses) takes about 1.4 ms, and a late
    # step does not change the step time the cost model reads
    r = run_engine("tire", "--mode", "realtime", "--period-ms", "4", "--steps", str(steps),
                   "--masses", str(masses), "--threads", str(threads), "--policy", policy,
                   "--cost-every", "4", *extra, timeout=60)
    return r.doc


def test_phases_counted_and_timed(run_engine):
    """The engine reports, per thread, the phases of the sampled steps and the
    constants derived from them; the fast solver times none."""
    d = run_engine("tire", "--mode", "realfast", "--masses", "4000", "--steps", "40", "--threads", "2",
                   "--policy", "other", "--no-mlock", "--cost-every", "4").doc
    th = d["cost"]["threads"]
    assert [t["e"] for t in th] == [2000, 2000] and all(t["lock_ops"] == 6 * 2000 + 4 for t in th)
    assert all(t["samples"] == 10 for t in th)
    for t in th:
        assert t["spring_ns"] > 0 and t["mass_ns"] > 0 and t["read_ns"] > 0 and t["write_ns"] > 0
        assert t["t_spring_ns"] == pytest.approx(t["spring_ns_median"] / 4001)
        assert t["spring_ns_median"] <= t["spring_ns"]     # a median of 10 samples below their sum
    for k in ("t_spring", "t_mass", "t_ipc"):
        assert d["metrics"][k]["value"] > 0
    assert d["metrics"]["nswitch_per_step"]["value"] >= 0
    fast = run_engine("tire", "--mode", "realfast", "--masses", "4000", "--steps", "10", "--solver", "fast",
                      "--policy", "other", "--no-mlock").doc
    assert "cost" not in fast and "t_spring" not in fast["metrics"]
    off = run_engine("tire", "--mode", "realfast", "--masses", "400", "--steps", "10", "--policy", "other",
                     "--no-mlock", "--cost-every", "0").doc
    assert all(t["samples"] == 0 for t in off["cost"]["threads"]) and "t_spring" not in off["metrics"]


@needs_root
def test_single_thread_phases_account_for_the_step(run_engine):
    """Ground truth: with one FIFO thread the step is its four phases and
    little else (the clock reads and the driver's own work), so the timed
    phases must add up to nearly all of the measured step and never to more.
    Every step is timed (--cost-every 1): the phase medians and the step
    median then come from the same steps, and a machine whose speed changes
    during the run (a co-runner, the host) moves both alike. With every 4th
    step, a CI run under load saw 0.89 of the step; with every step, 0.94-0.99
    idle and under `stress-ng --cpu 2`. A count that lost its largest phase
    (the deliberately broken one) accounts for about half and must fail.
    Noise on a loaded machine only lengthens steps: spread over the phases it raises the
    step's median more than the phases' (a CI run beside the background pass saw 0.80),
    never the other way. So a size is measured up to three times and passes on the first
    attempt that accounts for the step; the broken count must fail on every attempt, and
    the phases must never exceed the step."""
    for n in (3200, 12800):
        seen = []
        for _ in range(3):
            doc = tire_doc(run_engine, n, 1, "fifo", "--cost-every", "1")
            p = tirecost.cost_point(doc)
            assert p.share_ns <= 1.03 * p.ts_median_ns, (n, p.share_ns, p.ts_median_ns)
            t = doc["cost"]["threads"][0]
            phases = [t[k] for k in ("read_ns_median", "spring_ns_median", "mass_ns_median", "write_ns_median")]
            assert sum(phases) == pytest.approx(p.share_ns)
            broken = sum(phases) - max(phases)
            assert not 0.85 * p.ts_median_ns <= broken, (n, broken, p.ts_median_ns)
            pred = tirecost.predict(p, tirecost.constants([p]), None)
            assert pred == pytest.approx(p.share_ns, rel=1e-9)
            seen.append(round(p.share_ns / p.ts_median_ns, 3))
            if 0.85 * p.ts_median_ns <= p.share_ns:
                break
        else:
            raise AssertionError(f"{n} masses: the phases accounted for {seen} of the step in 3 attempts")


@needs_root
def test_fifo_locked_prediction_beats_the_one_that_ignores_threads(run_engine):
    """Constants (Tspring, Tmass, Tipc, Tswitch) measured at 3200 masses with 1,
    2 and 4 threads predict the step time of 800 and 12800 masses at every
    thread count. The accuracy target (median error at most 20%, docs/tire.md) is
    a speed-dependent figure: bench/tirecost.py measures and checks it. Here, what
    load cannot break: every held-out point gets a positive prediction, and the
    model beats the deliberately broken one that ignores the threads."""
    # Three interleaved rounds: a co-runner on the other CPU (or its SMT
    # sibling, or a higher-priority real-time thread) slows every phase for a
    # while; interleaving spreads it over both sets, the medians over rounds.
    pts = [tirecost.cost_point(tire_doc(run_engine, n, k, "fifo", steps=60))
           for _ in range(3) for n in SIZES for k in THREADS]
    train = [p for p in pts if p.masses == TRAIN_SIZE]
    held = [p for p in pts if p.masses != TRAIN_SIZE]
    ev = tirecost.evaluate(train, held)
    report = "; ".join(f"{r['masses']}/{r['threads']}: {r['measured_ns'] / 1e3:.0f} vs "
                       f"{r['predicted_ns'] / 1e3:.0f} us" for r in ev["predictions"])
    assert ev["tswitch_ns"] is not None and ev["tswitch_ns"] > 0, report
    assert len(ev["predictions"]) == len(held) and all(r["predicted_ns"] > 0 for r in ev["predictions"]), report
    # A prediction that ignored the threads (r = 1, no switches) must do worse on
    # the oversubscribed runs: the model's thread terms carry information.
    over = [p for p in held if p.threads > p.cpus]
    if over:
        c = ev["constants"]
        naive = [abs(p.lock_ops * c["Tipc"]["median"] + (2 * p.e + 1) * c["Tspring"]["median"]
                     + p.e * c["Tmass"]["median"] - p.ts_median_ns) / p.ts_median_ns for p in over]
        model = [r["error"] for r in ev["predictions"] if r["threads"] > 2]
        assert sorted(model)[len(model) // 2] < sorted(naive)[len(naive) // 2], report


def test_leave_one_out_on_known_costs():
    """Points built from known constants are predicted exactly, per policy."""
    truth = {"t_spring": 6.0, "t_mass": 5.0, "t_ipc": 7.0}
    pts = []
    for n in SIZES:
        for k in (1, 2, 4):
            e = n // k
            ops = 6 * e + 4
            share = ops * 7.0 + (2 * e + 1) * 6.0 + e * 5.0
            nsw = 0.0 if k == 1 else 1.0 + (k > 2) * 2.5
            ts = math.ceil(k / 2) * share + nsw * 12000.0
            pts.append(tirecost.CostPoint(n, k, "fifo", "realtime", 10.0, min(k, 2), e, ops, nsw, ts, ts,
                                          share_ns=share, **truth))
    other = [tirecost.CostPoint(p.masses, p.threads, "other", p.mode, p.period_ms, p.cpus, p.e, p.lock_ops,
                                p.nswitch, p.ts_median_ns * 1.1, p.ts_mean_ns, p.t_spring, p.t_mass, p.t_ipc,
                                p.share_ns) for p in pts]
    models = tirecost.leave_one_out(pts + other, 1400.0)
    assert set(models) == {"fifo", "other", "other from fifo constants", "fifo from other constants"}
    cross = models["other from fifo constants"]
    assert len(cross["predictions"]) == len(other)
    assert all(r["error"] == pytest.approx(0.1 / 1.1) for r in cross["predictions"])
    out = models["fifo"]
    assert out["tswitch_ns"] == pytest.approx(12000.0)
    assert out["median_error"] < 1e-9
    assert all(r["predicted_micro_ns"] < r["measured_ns"] or r["threads"] == 1 for r in out["predictions"])


def test_show_and_report_carry_the_cost_model(run_engine, tmp_path):
    """Real tire runs and a switch run stored as one run: `show --json` carries
    the constants and every configuration's prediction, `show` prints them and
    the report has its own section with the table."""
    import json
    import os
    import subprocess
    import sys

    from rtgauge.report.html import render
    from rtgauge.store import open_store
    from tests.test_report_builders import job, store_run

    docs = []
    for n in (800, 3200):
        for k in (1, 2):
            d = run_engine("tire", "--mode", "realfast", "--masses", str(n), "--steps", "60", "--threads", str(k),
                           "--policy", "other", "--no-mlock").doc
            docs.append((job(f"tire-{n}-{k}", "tire"), d))
    docs.append((job("switch", "switch"), run_engine("switch", "--iterations", "2000", "--policy", "other",
                                                     "--no-mlock").doc))
    url = f"sqlite:///{tmp_path / 'r.db'}"
    run_id = store_run(url, docs)
    env = dict(os.environ)
    out = cli(["show", str(run_id), "--json", "--db", url], env=env, timeout=300)     # a watchdog, not a speed
    assert out.returncode == 0, out.stderr
    model = json.loads(out.stdout)["tire_cost"]["other"]
    assert len(model["predictions"]) == 4
    assert model["tswitch_micro_ns"] > 0 and all(r["predicted_ns"] > 0 for r in model["predictions"])
    assert model["constants"]["Tspring"]["runs"] == 4
    text = cli(["show", str(run_id), "--db", url], env=env, timeout=60)
    assert "Tire cost equation (other)" in text.stdout and "predicted" in text.stdout
    # the report reads runs without their engine documents: the metrics suffice
    with open_store(url) as store:
        assert render([store.get_run(run_id, documents=False)]) is not None
    page = tmp_path / "r.html"
    rep = cli(["report", str(run_id), "--db", url, "-o", str(page)], env=env, timeout=60)
    assert rep.returncode == 0, rep.stderr
    html = page.read_text()
    start = html.index("id='tirecost'")
    end = html.find("<section", start + 1)
    section = html[start:end if end > 0 else len(html)]     # empty sections are left out: the next one
    assert "median prediction error" in section.lower() and section.count("<td>3,200</td>") == 2


@needs_root
def test_nswitch_counts_only_the_unplanned_switches(run_engine):
    """eq. 2's Nswitch is the switches the solver did not ask for (involuntary,
    ru_nivcsw per solver thread): every paced thread of the paper's solver sleeps
    once a step until its next period, and that planned sleep is not counted. Under
    FIFO with no more threads than CPUs nothing preempts the solver, so Nswitch is
    near 0 (the study's argument); the broken count (voluntary + involuntary) is at
    least one a step, the sleep itself."""
    steps = 200
    d = run_engine("tire", "--mode", "realtime", "--period-ms", "2", "--masses", "400", "--threads", "2",
                   "--solver", "paper", "--lock", "sem", "--policy", "fifo", "--steps", str(steps), timeout=60).doc
    th = d["cost"]["threads"]
    late = d["metrics"]["misses"]["value"]          # a late step is run at once, without a sleep
    assert len(th) == 2
    for t in th:
        assert t["nswitch_per_step"] == pytest.approx(t["nivcsw"] / steps)
        assert t["nvcsw"] >= steps - late - 1                # the planned sleeps are there, uncounted
        assert (t["nvcsw"] + t["nivcsw"]) / steps >= 0.9     # what the broken count would have said
    assert d["metrics"]["nswitch_per_step"]["value"] < 0.5, th
    # the cost model reads the same: Nswitch from nivcsw; the sleeps of both threads are planned
    from rtgauge.records import Measurement
    p = tirecost.measured_point(Measurement.from_dict(dict(d, ok=True)))
    assert p is not None and p.nswitch == pytest.approx(d["metrics"]["nivcsw"]["value"] / steps / p.cpus)
    assert p.nwait == pytest.approx(max(0, d["metrics"]["nvcsw"]["value"] - 2 * steps) / steps / p.cpus)
    assert p.nwait < 0.5
