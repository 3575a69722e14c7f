"""The one search routine of rtgauge's sweeps: the hardest setting at which a run still
holds, for a property that is monotone in the setting (once a setting fails, every
harder one fails too). The tire sweep searches the largest model (more masses is
harder), the HIL sustained-rate sweep the shortest period (a shorter period is harder);
both walk a coarse grid from a start until the first failure, then bisect between the
last setting that held and the first that failed.

The grid and the bisection's midpoint are the caller's (the tire's sizes are multiples
of 4 on a ×ratio grid, the HIL periods halve and double): `harder(x)`/`easier(x)` give
the next grid point in that direction or None at the end of the range, `middle(good,
bad)` the next setting to try or None when the interval is narrow enough. Every probe
is recorded, in order, with its outcome."""

from __future__ import annotations

from typing import Callable, Optional, TypeVar

X = TypeVar("X")


def hardest_holding(holds: Callable[[X], bool], start: X, *,
                    harder: Callable[[X], Optional[X]],
                    easier: Callable[[X], Optional[X]],
                    middle: Callable[[X, X], Optional[X]]) -> tuple[Optional[X], list[tuple[X, bool]]]:
    """(hardest setting seen to hold, [(setting, held)...] in the order probed); None
    when no setting from start towards the easiest one held."""
    probes: list[tuple[X, bool]] = []

    def probe(x: X) -> bool:
        ok = holds(x)
        probes.append((x, ok))
        return ok

    good: Optional[X] = None
    bad: Optional[X] = None
    if probe(start):
        good = start
        while bad is None:                       # harder along the grid until one fails
            x = harder(good)
            if x is None:
                break
            if probe(x):
                good = x
            else:
                bad = x
    else:
        bad = start
        while good is None:                      # easier along the grid until one holds
            x = easier(bad)
            if x is None:
                return None, probes
            if probe(x):
                good = x
            else:
                bad = x
    if bad is None:
        return good, probes
    return narrow(probe, good, bad, middle), probes


def narrow(holds: Callable[[X], bool], good: X, bad: X, middle: Callable[[X, X], Optional[X]]) -> X:
    """Bisect between good (holds) and bad (fails) while `middle` gives a setting to try;
    the last one that held."""
    while (x := middle(good, bad)) is not None:
        if holds(x):
            good = x
        else:
            bad = x
    return good
