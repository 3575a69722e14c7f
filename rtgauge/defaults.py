"""The analysis' user-facing defaults, in a module that imports nothing heavy, so that
the command line can show them in its help without loading numpy or scipy."""

DEFAULT_EXCEEDANCE = 1e-9   # pWCET: per-cycle probability of exceeding the level (docs/pwcet.md)
REGRESSION_ALPHA = 0.05     # compare: significance level of a regression call (docs/compare.md)
# tire: the step period a run without --period-ms steps at, per mode (the engine's
# tire.c; its option table cannot declare it: --mode pretest has its own period, and
# the params record the option as given). tests/test_tire_engine.py checks both.
TIRE_PERIOD_MS = {"realtime": 10.0, "pretest": 0.5}
