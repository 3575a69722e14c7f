"""The paper's solver (`rtgauge-engine tire --solver paper`, docs/tire.md): the
study's structure, in place under the node locks, every thread on its own period
and no barrier. Ground truth: with one thread it computes exactly what the
deterministic solver does; with several its physics still holds (free fall to the
floor at the analytic instant, no NaN, nothing below the floor, energy bounded);
a step is late when any thread's share was; a miss ends every thread; the cost
equation models it apart, with its tail."""

from __future__ import annotations

import math

import pytest

from rtgauge.analysis.studies import tirecost

QUIET = ("--policy", "other", "--no-mlock")


def tire(run_engine, *args, timeout=180):
    r = run_engine("tire", *args, timeout=timeout)
    assert r.status in (0, 3), r.stderr
    return r.doc


def test_one_thread_computes_what_the_locked_solver_does(run_engine):
    """One thread has no neighbour to race with: in place equals double-buffered,
    bit for bit."""
    sums = {}
    for solver in ("locked", "paper"):
        d = tire(run_engine, "--mode", "realfast", "--masses", "400", "--steps", "300", "--threads", "1",
                 "--solver", solver, "--lock", "sem", *QUIET)
        sums[solver] = d["physics"]["checksum"]
    assert sums["locked"] == sums["paper"]


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.shared
def test_paced_threads_keep_the_physics(run_engine, threads):
    """Several threads racing at the node locks, paced by the period: the tire falls
    and meets the floor near the analytic free-fall instant (h = 0.2 m: t =
    sqrt(2h/g) = 0.202 s, step 20 at 10 ms). Only near: a thread reads its neighbours'
    nodes as they are, a step ahead or behind when one thread ran late and caught up
    (on a loaded machine, by several), which moves the bottom node's contact by as
    many steps; the deterministic solvers hit it within one step (test_tire_engine.py)
    and with one thread this one does too (above). Nothing goes below the floor, no
    NaN, the energy does not grow."""
    d = tire(run_engine, "--mode", "realtime", "--period-ms", "10", "--masses", "4000", "--steps", "40",
             "--threads", str(threads), "--solver", "paper", "--lock", "sem", "--policy", "fifo", "--no-mlock")
    ph = d["physics"]
    fall = math.sqrt(2 * 0.2 / 9.81)
    assert 0.5 * fall <= ph["first_contact_s"] <= 1.5 * fall
    assert ph["nan"] is False and ph["below_floor"] == 0
    assert 0 < ph["energy_j"] <= 1.05 * ph["energy_initial_j"]
    assert ph["steps_done"] == 40 and d["verdicts"]["completed"]["pass"]
    assert [t["role"] for t in d["env"]["solver_threads"]] == ["own"] * threads


def test_free_running_threads_stay_finite(run_engine):
    """Real-fast, nothing paces the threads: they drift apart by whole steps (the
    study's structure has no barrier), so the motion is not the model's, but the
    state stays finite and above the floor."""
    d = tire(run_engine, "--mode", "realfast", "--masses", "4000", "--steps", "400", "--threads", "3",
             "--solver", "paper", "--lock", "sem", *QUIET)
    ph = d["physics"]
    assert ph["nan"] is False and ph["below_floor"] == 0 and math.isfinite(ph["energy_j"])
    assert ph["steps_done"] == 400 and d["verdicts"]["completed"]["pass"]


def test_each_thread_runs_its_own_period(run_engine):
    """Realtime: every thread is a periodic thread of its own (its own Ti/Ts/Tw,
    cycles and misses), none is a driver; the run's misses are late steps, each
    counted once however many threads were late in it (the union of the threads')."""
    d = tire(run_engine, "--mode", "realtime", "--masses", "400", "--steps", "100", "--period-ms", "10",
             "--threads", "2", "--solver", "paper", *QUIET)
    m = d["metrics"]
    assert m["cycles#0"]["value"] == m["cycles#1"]["value"] == 100
    assert "ts#0" in m and "ts#1" in m
    late, per = m["misses"]["value"], (m["misses#0"]["value"], m["misses#1"]["value"])
    assert late == m["late_steps"]["value"]
    assert max(per) <= late <= sum(per)
    assert d["verdicts"]["hard_realtime"]["pass"] == (late == 0)


def test_a_step_is_late_when_any_thread_is_and_a_miss_stops_all(run_engine):
    """A period far too short for the size: every step late, counted once per step
    (not per thread); with --stop-on-miss every thread stops at the first."""
    d = tire(run_engine, "--mode", "realtime", "--masses", "200000", "--steps", "40", "--period-ms", "0.05",
             "--threads", "2", "--solver", "paper", *QUIET)
    m = d["metrics"]
    assert m["late_steps"]["value"] == m["misses"]["value"] == 40
    assert not d["verdicts"]["hard_realtime"]["pass"]
    s = tire(run_engine, "--mode", "realtime", "--masses", "200000", "--steps", "400", "--period-ms", "0.05",
             "--threads", "2", "--solver", "paper", "--stop-on-miss", *QUIET)
    assert s["metrics"]["steps"]["value"] < 400
    assert "stopped at the first miss" in s["verdicts"]["completed"]["detail"]


def test_the_cost_model_keeps_the_papers_solver_apart_and_predicts_its_tail(run_engine):
    """Real runs of both solvers: each is modelled under its own key, with a p99
    prediction beside the median's."""
    docs = []
    for solver in ("locked", "paper"):
        for n, k in ((400, 1), (1200, 2), (2400, 2)):
            docs.append(tire(run_engine, "--mode", "realtime", "--period-ms", "10", "--steps", "40",
                             "--masses", str(n), "--threads", str(k), "--solver", solver, "--cost-every", "2",
                             *QUIET))
    pts = [tirecost.cost_point(d) for d in docs]
    assert all(pts) and {p.solver for p in pts} == {"locked", "paper"}
    model = tirecost.leave_one_out(pts)
    assert {"other", "other, paper solver"} <= set(model)
    rows = model["other, paper solver"]["predictions"]
    assert len(rows) == 3 and all(r["predicted_p99_ns"] > r["predicted_ns"] > 0 for r in rows)


def test_the_tail_factor_predicts_a_known_tail():
    """Synthetic points whose p99 is 1.5 times their median: the predicted p99 is 1.5
    times the predicted median, and an error measured against the truth."""
    def point(n, k, p50):
        e = -(-n // k)
        return tirecost.CostPoint(n, k, "fifo", "realtime", 10.0, k, e, 6 * e + 4, 0.0, p50, p50, 1.0, 1.0, 1.0,
                                  p50, ts_p99_ns=1.5 * p50, solver="paper")
    pts = [point(n, 1, 3.0 * n) for n in (100, 200, 400, 800)]
    ev = tirecost.evaluate(pts[:3], pts[3:])
    assert ev["tail_factor"] == pytest.approx(1.5)
    [r] = ev["predictions"]
    assert r["predicted_p99_ns"] == pytest.approx(1.5 * r["predicted_ns"])
    assert r["p99_error"] == pytest.approx(r["error"], rel=1e-9)
