"""The analysis' user-facing defaults, in a module that imports nothing heavy, so that
the command line can show them in its help without loading numpy or scipy."""

from rtgauge.units import parse_time

DEFAULT_EXCEEDANCE = 1e-9   # pWCET: per-cycle probability of exceeding the level (docs/pwcet.md)
# pWCET: below this a probability is no longer one a double tells apart from 0 in the
# fitted tail (1e-320 is subnormal and gave an infinite latency); nothing measured speaks
# for less (pwcet --exceedance, compare --pwcet --exceedance)
EXCEEDANCE_MIN = 1e-18
REGRESSION_ALPHA = 0.05     # compare: significance level of a regression call (docs/compare.md)
# tire: the step period a run without --period-ms steps at, per mode (the engine's
# tire.c; its option table cannot declare it: --mode pretest has its own period, and
# the params record the option as given). tests/test_tire_engine.py checks both.
TIRE_PERIOD_MS = {"realtime": 10.0, "pretest": 0.5}
# latency: the interval a job without --interval-us wakes at, µs (the engine's latency.c
# states its option's default; tests/test_records.py checks the two agree). Written once:
# a cross-check tool's command (cyclictest -i, rtla -p) and its document read it through
# interval_us().
LATENCY_INTERVAL_US = 1000


def interval_us(options: dict) -> int:
    """A latency job's interval in µs, parsed once for every Python reader: the option as
    the profile or command line gave it (a number, or a time with its unit: '500',
    '1ms'), else the engine's default. ValueError on a value that is not a whole time."""
    given = options.get("interval-us")
    if given is None:
        return LATENCY_INTERVAL_US
    if isinstance(given, bool):
        raise ValueError(f"{given!r} is not a time")
    value = parse_time(str(given), "us", whole=True)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{given!r} is not a time")
    return int(value)
