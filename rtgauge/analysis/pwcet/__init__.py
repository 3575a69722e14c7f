"""The probable worst-case latency (pWCET) from extreme value theory.

Block maxima (the engine's per-window maxima `ti_window_max`, or raw samples cut into
blocks of cycles) are fitted with a generalised extreme value (GEV) distribution by
maximum likelihood (scipy.stats.genextreme). The latency exceeded with probability p
per cycle is the block-level return level for q = 1 - (1 - p)^m, m cycles a block,
with a 95 % profile-likelihood interval. Before the number, the conditions that make
it meaningful are tested; when one fails the result says "not applicable because ..."
instead of a number. docs/pwcet.md explains the method and how to read the result.

The package, a module a concern: fit.py (the GEV fit, its intervals and the method's
parameters), checks.py (the applicability checks), text.py (the answer, Pwcet, and its
words), estimate.py (analyse, and the answers of stored measurements), samples.py (a raw
samples file cut into blocks; rtgauge/analysis/samples.py reads it), pot.py (peaks over
a threshold), autocorr.py (the Ljung-Box test) and compare.py (two systems' worst cases). Every name is importable from
here, as it was from the single module.
"""

from __future__ import annotations

from rtgauge.defaults import DEFAULT_EXCEEDANCE  # noqa: F401
from rtgauge.analysis.pwcet.fit import (  # noqa: F401
    CONFIDENCE,
    MIN_BLOCKS,
    ALPHA,
    GOF_DRAWS,
    COMPARE_DRAWS,
    CI_METHOD,
    METHOD,
    EXTRAPOLATION,
    MAX_SPAN,
    MIX_GAP,
    MIX_ALPHA,
    CODES,
    POT_METHOD,
    GevFit,
    block_probability,
    cycles_to_reach,
    _quiet,
    _standardise,
    _loglik,
    _nll,
    _isf1,
    fit_gev,
    _fit_gev,
    refit,
    _profile,
    return_level,
    _return_level,
    shape_interval,
    tail_class,
    evidence_limit,
    cycles_needed,
    _level_at,
    supported_level,
)
from rtgauge.analysis.pwcet.checks import (  # noqa: F401
    Check,
    check_independence,
    check_identical,
    _ad,
    check_fit,
    find_mixture,
    holdout_check,
    _judge_holdout,
    check_cluster_rate,
    holdout_check_pot,
    _failed_text,
)
from rtgauge.analysis.pwcet.text import (  # noqa: F401
    Pwcet,
    UNITS,
    duration_text,
    once_per,
    _num,
    plot_data,
)
from rtgauge.analysis.pwcet.estimate import (  # noqa: F401
    _ANSWERS,
    _ANSWERS_KEPT,
    analyse,
    _analyse,
    _conclude,
    _analyse_pot,
    _series_keys,
    measurement_series,
    seen_max,
    _series_max,
    measurement_pwcet,
    worst_case,
)
from rtgauge.analysis.pwcet.samples import (  # noqa: F401
    BLOCKS_MAX,
    default_block,
    samples_pwcet,
)
from rtgauge.analysis.pwcet.compare import (  # noqa: F401
    _bootstrap_levels,
    compare_pwcet,
    _as_pwcet,
)
