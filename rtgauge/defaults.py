"""The analysis' user-facing defaults, in a module that imports nothing heavy, so that
the command line can show them in its help without loading numpy or scipy."""

DEFAULT_EXCEEDANCE = 1e-9   # pWCET: per-cycle probability of exceeding the level (docs/pwcet.md)
REGRESSION_ALPHA = 0.05     # compare: significance level of a regression call (docs/compare.md)
