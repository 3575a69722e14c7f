"""The one search routine of the sweeps (rtgauge/search.py), on properties whose
answer is known: a threshold, in both directions, with the grid and bisection the tire
and HIL sweeps give it."""

from __future__ import annotations

import pytest

from rtgauge.search import hardest_holding, narrow


def doubling(hi):
    return lambda x: None if x >= hi else min(hi, x * 2)


def integer_middle(good, bad):
    mid = (good + bad) // 2
    return None if abs(bad - good) <= 1 or mid in (good, bad) else mid


@pytest.mark.parametrize("threshold", [1, 2, 7, 64, 65, 999, 1000])
def test_finds_the_largest_holding_setting_exactly(threshold):
    best, probes = hardest_holding(lambda x: x <= threshold, 1, harder=doubling(1000), easier=lambda x: None,
                                   middle=integer_middle)
    assert best == threshold
    assert all(ok == (x <= threshold) for x, ok in probes)      # every probe recorded with its outcome
    assert len(probes) <= 2 * 10 + 2                              # a grid then a bisection, not a scan


@pytest.mark.parametrize("threshold", [20, 21, 333, 4096, 8000])
def test_searches_towards_smaller_settings_from_a_failing_start(threshold):
    """The HIL direction: a shorter period is harder; from a start that fails, double
    until it holds, then bisect down to the shortest that holds."""
    best, probes = hardest_holding(lambda p: p >= threshold, 50, harder=lambda p: max(20, p // 2) if p > 20 else None,
                                   easier=lambda p: min(8000, p * 2) if p < 8000 else None,
                                   middle=lambda good, bad: None if good - bad <= 1 else (good + bad) // 2)
    assert best == threshold
    assert probes[0] == (50, 50 >= threshold)


def test_nothing_holds_and_everything_holds():
    assert hardest_holding(lambda x: False, 4, harder=doubling(100), easier=lambda x: None,
                           middle=integer_middle) == (None, [(4, False)])
    best, probes = hardest_holding(lambda x: True, 4, harder=doubling(100), easier=lambda x: None,
                                   middle=integer_middle)
    assert best == 100 and [x for x, _ in probes] == [4, 8, 16, 32, 64, 100]


def test_narrow_keeps_the_last_that_held():
    assert narrow(lambda x: x <= 37, 10, 100, integer_middle) == 37
