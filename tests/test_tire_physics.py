"""Physics of the tire through the engine: nothing below the floor, no NaN,
bounded energy from 4 to 10^6 masses at the default and the pretest step."""

from __future__ import annotations

import math

import pytest

QUIET = ("--policy", "other", "--no-mlock", "--mode", "realfast")


@pytest.mark.parametrize("masses, steps, period", [
    (4, 6000, None), (8, 6000, None), (12, 6000, None), (400, 6000, None), (40000, 6000, None),
    (1000000, 30, None),                       # through the impact (first contact at 0.2 s)
    (4, 4000, "0.5"), (400, 4000, "0.5"), (4000, 4000, "0.5"),
])
def test_stable(run_engine, masses, steps, period):
    args = ["--masses", str(masses), "--steps", str(steps), "--solver", "fast", "--threads", "2"]
    if period:
        args += ["--period-ms", period]
    r = run_engine("tire", *args, *QUIET, timeout=300)
    assert r.status == 0, r.stderr
    ph = r.doc["physics"]
    assert ph["nan"] is False
    assert ph["below_floor"] == 0
    assert math.isfinite(ph["energy_j"]) and 0 <= ph["energy_j"] <= 1.05 * ph["energy_initial_j"]
    assert ph["first_contact_s"] is not None
    assert all(0 <= y < 0.3 + 0.2 + 0.3 for _, y in ph["centroid_height_m"])
    assert ph["model"]["dt_omega_max"] < 1.0


def test_settles(run_engine):
    """After 60 s the tire is at rest: the last centroid samples agree to 0.1 mm
    and the energy is far below the drop's."""
    r = run_engine("tire", "--masses", "40", "--steps", "6000", *QUIET)
    ph = r.doc["physics"]
    ys = [y for _, y in ph["centroid_height_m"]]
    assert abs(ys[-1] - ys[-2]) < 1e-4
    assert ph["energy_j"] < 0.8 * ph["energy_initial_j"]
    assert 0 < ph["rest_height_m"] < 0.3
