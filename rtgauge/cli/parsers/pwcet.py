"""`rtgauge pwcet`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/pwcet.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_db_option, add_format_option
from rtgauge.defaults import DEFAULT_EXCEEDANCE


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pwcet", help="the probable worst-case latency of a run or samples file (extreme value theory)",
        description="Fit a GEV distribution to the block maxima of wake-up latency (the per-window maxima a "
        "run stored, or blocks of a raw samples file) and give the latency exceeded with probability P per "
        "cycle, with its 95% confidence interval, only where the data support it: the maxima independent, "
        "identically distributed, one regime, fitted well and predicting a held-out half, the tail not heavy, "
        "P within the evidence. Otherwise no number but a reason code (heavy-tail, not-iid, mixture, ...), the "
        "level at the smallest probability the data support, and the run length P needs. docs/pwcet.md explains it.")
    p.add_argument("run", nargs="?", metavar="RUN", help="a run id, or 'latest'")
    p.add_argument("--samples", metavar="FILE", help="a raw samples file (docs/samples.md) instead of a run")
    p.add_argument("--exceedance", metavar="P", type=str, default=str(DEFAULT_EXCEEDANCE),
                   help=f"per-cycle probability of exceeding the level (default {DEFAULT_EXCEEDANCE:g})")
    p.add_argument("--block-cycles", metavar="N", type=str, default=None,
                   help="with --samples: cycles per block (default 1000, fewer for short files so there are "
                   "about 100 blocks)")
    add_db_option(p)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    add_format_option(p)
