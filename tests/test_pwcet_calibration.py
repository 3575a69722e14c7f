"""Validation that can fail (scripts/calibration.py): on synthetic tails
with a known answer, the method behind an estimate passes the held-out check (PIT of
the held-out maximum uniform, two-sided) and its point estimate's held-out exceedances
stay near their probability, while a deliberately inflated and a deliberately deflated
version of it fail both the PIT and the binomial reliability test; sharpness shows by
how much."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import calibration as pc  # noqa: E402  (scripts/calibration.py: the calibration's draws and judges)


BLOCKS, M, CASES = 300, 100, 80


@pytest.fixture(scope="module", params=["exponential", "heavy"])
def cases(request):
    # each case: 300 block maxima fitted, the next 300 blocks held out; the level of the
    # reliability test is the one a block exceeds with probability 1/300
    return request.param, pc.synthetic_cases(request.param, CASES, BLOCKS, M, ahead=1, seed=3)


def test_the_calibrated_method_passes(cases):
    name, cs = cases
    c = pc.judge(cs, 1 / BLOCKS, "calibrated")
    assert c.passed and c.ks_p > pc.ALPHA, (name, c.row())
    assert 0.85 < c.sharpness_median < 1.15, (name, c.row())
    # the plug-in point estimate is exceeded somewhat more often than its probability
    # (parameter uncertainty; docs/performance.md), but not by a broken method's factor
    assert 0.7 * c.expected < c.exceedances < 1.6 * c.expected, (name, c.row())


@pytest.mark.parametrize("method", ["inflated", "deflated"])
def test_a_broken_method_fails_both_ways(cases, method):
    name, cs = cases
    c = pc.judge(cs, 1 / BLOCKS, method)
    assert not c.passed and not c.reliable, (name, c.row())
    # inflated: held-out maxima below the prediction (PIT near 0, too few exceedances)
    if method == "inflated":
        assert c.sharpness_median > 1.2 and c.exceedances < c.expected
    else:
        assert c.sharpness_median < 0.85 and c.exceedances > c.expected


def test_a_mixture_is_not_calibrated_by_a_single_gev():
    """Rare bounded stalls among a quiet regime: one GEV fitted to both predicts the held-out
    maxima badly; this is why analyse refuses such series (code "mixture")."""
    cs = pc.synthetic_cases("mixture", 40, BLOCKS, M, ahead=1, seed=4)
    assert not pc.judge(cs, 1 / BLOCKS, "calibrated").passed
