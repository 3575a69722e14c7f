"""The tire sweep (bisection for the largest hard real-time tire) and the fit of
the published cost equation."""

from __future__ import annotations

import random

import pytest

from conftest import needs_root
from rtgauge.tire import fit, sweep


@pytest.mark.parametrize("limit", [4, 1000, 57000, 123456, 3_999_996])
def test_bisection_finds_the_threshold(limit):
    calls = []

    def holds(n):
        calls.append(n)
        return n <= limit

    best, probes = sweep.largest_holding(holds, 1000, 4_000_000, 2.0, 0.05)
    if limit < 1000:
        assert best is None and probes == [(1000, False)]
        return
    assert best is not None and best <= limit and best % 4 == 0
    assert (limit - best) / limit <= 0.05 or limit - best <= 4
    assert len(calls) < 30
    assert all(ok == (n <= limit) for n, ok in probes)


def test_bisection_stops_at_the_top():
    best, probes = sweep.largest_holding(lambda n: True, 1000, 10000, 2.0, 0.05)
    assert best == 10000 and probes[-1] == (10000, True)


def test_published_thread_counts():
    counts = sweep.published_thread_counts()
    assert counts[0] == 1 and counts == sorted(set(counts))
    import os
    logical = len(os.sched_getaffinity(0))
    assert max(counts) == 2 * logical and logical in counts
    assert round(1.5 * logical) in counts            # the study's 1.5 threads per logical CPU


def test_fit_recovers_known_terms():
    truth = {"Tswitch": 3000.0, "Tipc": 25.0, "Tspring": 9.0, "Tmass": 4.0}
    rng = random.Random(7)
    pts = []
    for n in (1000, 4000, 16000, 64000, 256000):
        for k in (1, 2, 4):
            e = n // k
            ops = 6 * e + 4
            nsw = rng.choice([0.0, 0.01, 0.2, 1.5])
            ts = nsw * truth["Tswitch"] + ops * truth["Tipc"] + (2 * e + 1) * truth["Tspring"] + e * truth["Tmass"]
            pts.append({"e": e, "ts_ns": ts, "lock_ops": ops if k != 4 else 0, "nswitch": nsw})
            if k == 4:   # fast solver points: no lock traffic
                pts[-1]["ts_ns"] -= ops * truth["Tipc"]
    f = fit.fit_cost(pts)
    for name, v in truth.items():
        assert f["terms_ns"][name] == pytest.approx(v, rel=1e-6), name
    assert f["residual_rms_ns"] < 1e-6 * max(p["ts_ns"] for p in pts)


def test_fit_leaves_out_undetermined_terms():
    pts = [{"e": e, "ts_ns": 10.0 * e + 5, "lock_ops": 0, "nswitch": 0} for e in (10, 100, 1000)]
    f = fit.fit_cost(pts)
    assert f["terms_ns"]["Tipc"] is None and f["terms_ns"]["Tswitch"] is None
    assert f["terms_ns"]["Tspring"] == pytest.approx(5.0) and f["terms_ns"]["Tmass"] == pytest.approx(0.0, abs=1e-6)


def test_fit_refuses_the_locked_solver_alone():
    """Locked-solver probes only: 6e + 4 = 4(2e+1) - 2e, the columns are
    collinear, so least squares cannot identify the constants and says so."""
    pts = [{"e": e, "ts_ns": 25.0 * (6 * e + 4) + 400.0 * (2 * e + 1) + 80.0 * e + 3000.0 * nsw,
            "lock_ops": 6 * e + 4, "nswitch": nsw} for e, nsw in ((100, 0.1), (1000, 0.5), (4000, 0.2), (9000, 1.0))]
    f = fit.fit_cost(pts)
    assert f["identifiable"] is False and all(v is None for v in f["terms_ns"].values())


def test_fit_uses_the_measured_constants(run_engine):
    """Probes with the solver's timed phases: the constants are the measured
    ones (no least squares), and they give the step time back."""
    docs = [run_engine("tire", "--mode", "realfast", "--masses", str(n), "--steps", "40", "--threads", str(k),
                       "--policy", "other", "--no-mlock").doc for n, k in ((800, 1), (3200, 1), (3200, 2))]
    pts = [fit.point_from_doc(d) for d in docs]
    f = fit.fit_cost(pts)
    assert f["method"] == "measured"
    assert f["terms_ns"]["Tspring"] == pytest.approx(sorted(d["metrics"]["t_spring"]["value"] for d in docs)[1])
    assert f["terms_ns"]["Tipc"] > 0 and f["terms_ns"]["Tmass"] > 0


def test_point_from_engine_document(run_engine):
    r = run_engine("tire", "--mode", "realfast", "--masses", "4000", "--steps", "50", "--threads", "2",
                   "--policy", "other", "--no-mlock")
    pt = fit.point_from_doc(r.doc)
    assert pt["e"] == 2000 and pt["lock_ops"] == (6 * 4000 + 8) / 2 and pt["ts_ns"] > 0


@needs_root
@pytest.mark.shared
def test_small_sweep_against_the_engine(engine_bin):
    """A real sweep on a narrow range: the answer holds when re-run and the
    next grid point up is much bigger than a probe that failed."""
    spec = sweep.SweepSpec(masses_min=400, masses_max=1_000_000, grid_ratio=4.0, precision=0.25,
                           threads=[1], policies=["fifo"], solver="locked", period_ms=2.0, steps=50,
                           cpus="1", retries=2, realfast=False, pretest=False, time_limit_s=10)
    result = sweep.run_sweep(engine_bin, spec)
    row = result["results"][0]
    failed = [p["masses"] for p in row["probes"] if not p["holds"]]
    assert failed                                   # the search found where it stops holding
    if row["largest_masses"] is None:
        # a host stall can make even the smallest size miss once on a loaded machine
        # (every attempt counts): then nothing held, and it was the smallest that failed
        assert min(failed) == 400, row
        return
    assert min(failed) > row["largest_masses"]
    doc = sweep.sweep_document(result, fit.fit_cost([fit.point_from_doc(d) for d in result["probe_docs"]]))
    assert doc["metrics"]["largest_masses#threads=1,policy=fifo"]["value"] == row["largest_masses"]


def test_profile_tire_table():
    from rtgauge.profiles import parse_profile
    text = '''
name = "t"
[[jobs]]
name = "lat"
test = "latency"
[tire]
masses_min = 4000
masses_max = 400000
threads = [1, 2]
policies = ["fifo"]
solver = "fast"
'''
    p = parse_profile(text, "t.toml")
    assert p.tire.threads == [1, 2] and p.tire.solver == "fast" and p.tire.masses_max == 400000
    assert parse_profile(text.split("[tire]")[0], "t.toml").tire is None


@pytest.mark.parametrize("table, words", [
    ({"masses": 4}, "unknown key 'masses'"),
    ({"threads": [0]}, "threads must be"),
    ({"solver": "turbo"}, "solver must be"),
    ({"masses_min": 100, "masses_max": 10}, "masses_min and masses_max"),
    ({"period_ms": "10"}, "wrong type"),
])
def test_bad_tire_table(table, words):
    from rtgauge.errors import UserError
    with pytest.raises(UserError, match=words):
        sweep.spec_from_table(table, "profile x")
