"""`rtgauge run`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/run.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

import argparse

from rtgauge.cli.common import add_budget_options, add_db_option, add_format_option
from rtgauge.errors import EXIT_HELP
from rtgauge.units import time_option


def register(sub) -> None:
    p = sub.add_parser("run", help="measure this system with a profile and store the results",
                       description="Measure this system with a profile, store every job as it ends, print a "
                       "summary and write the report. With a budget, answer whether the system can carry the "
                       "job (yes / no / not enough evidence) and exit with that answer's status; with --fail-on, "
                       "gate the run on absolute rules (docs/verdict.md, docs/ci.md).",
                       epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("what to measure")
    g.add_argument("--profile", default=None,
                   help="quick (about 3 min), standard (about 25 min), micro, hil, a published study "
                   "(tire-study, interrupt-study, rtos-evaluation, cyclictest-study, each also NAME-quick; "
                   "docs/studies.md) or a TOML file (default: $RTGAUGE_PROFILE, else the config file's profile, else quick)")
    g.add_argument("--duration", metavar="TIME", help="length of every latency job, e.g. 90s, 10m, 24h")
    g.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="run every job N times, each round a separate engine run, so that `rtgauge compare` "
                   "knows each figure's noise (default: the profile's rounds, usually 1)")
    g.add_argument("--interleave", metavar="PROFILE", default=None,
                   help="also measure this profile (it may be the same one), stored as a second run, its rounds "
                   "interleaved with the first's: the fair way to compare two settings on one machine")
    g.add_argument("--target", default=None, metavar="ssh://[user@]host[:port]",
                   help="measure that machine over SSH instead of this one (an engine built for it runs there; "
                   "documents are stored here; docs/cross.md); default: the profile's target, else here")
    g.add_argument("--rt-cpus", metavar="CPUS", help="CPUs that measure (becomes the engine's --cpus)")
    g.add_argument("--load-cpus", metavar="CPUS", help="CPUs the load runs on (default: the others)")
    g.add_argument("--attribute", action="store_true",
                   help="trace the measured CPUs for the whole latency job and name what delayed every wake-up "
                        "above the attribution threshold (docs/attribution.md; root and tracefs; default: the "
                        "profile's settings.attribute)")
    g.add_argument("--tuned", action="store_true",
                   help="apply `rtgauge tune` for the run and revert it after, also on failure")
    add_verdict_options(p)
    g = p.add_argument_group("output")
    g.add_argument("--report", default=None, metavar="FILE",
                   help="HTML report to write at the end (default: rtgauge-run-N.html here)")
    g.add_argument("--no-report", action="store_true", help="do not write an HTML report")
    g.add_argument("--json", action="store_true",
                   help="print the stored run as `rtgauge show RUN --json` gives it on standard output; "
                   "progress, warnings and the summary go to standard error")
    add_format_option(g)
    g.add_argument("--live", action="store_true",
                   help="show per CPU the max so far and the last window's max and p99, and the misses, while a "
                        "latency job runs (from the engine's status: a line a window, docs/samples.md)")
    g.add_argument("--metrics-file", metavar="PATH",
                   help="keep the same figures in PATH as a Prometheus text exposition, rewritten atomically at "
                        "each window (for node_exporter's textfile collector in long soaks; not a symbolic link)")
    g = p.add_argument_group("database")
    add_db_option(g)
    g.add_argument("--segment", metavar="TIME", default="10m",
                   help="store a long latency job in segments of this length (default 10m), so a run "
                        "that dies keeps what it measured")
    g.add_argument("--run-id-file", default=None, metavar="FILE",
                   help="write the id of each run stored (one a line) to FILE as soon as it is begun: for a "
                   "program that starts `rtgauge run` (`rtgauge lab` does) instead of reading its console")
    add_advanced_options(p)


def add_verdict_options(p) -> None:
    """The job's budget, the verdict against it, and CI gates (docs/verdict.md, docs/ci.md)."""
    g = p.add_argument_group("the job's budget: a verdict against it; CI gates")
    add_budget_options(g, "the worst wake-up latency the job tolerates, µs; gives a verdict (yes / no / not enough "
                       "evidence) and its exit status (default: the profile's [budget], else the config file's)",
                       "the job's period, µs (with a budget)",
                       "the share of cycles allowed later than the budget, e.g. 1e-6 (default: none, hard)")
    g.add_argument("--until-verdict", action="store_true",
                   help="with a budget: repeat the latency jobs, round after round, until the verdict is yes "
                   "or no, or --max-time has passed")
    g.add_argument("--max-time", metavar="TIME", default="1h",
                   help="with --until-verdict: the ceiling on the whole run, e.g. 30m, 4h (default 1h)")
    g.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="an absolute rule checked on every job of this run, e.g. 'max_latency>100us', "
                   "'misses>0', 'p99_latency>50us', 'pwcet>200us' (the credible worst case; undecided without "
                   "one); repeatable; exit status 3 when one is broken")
    g.add_argument("--junit", metavar="FILE", help="write the rules' and the verdict's outcome as JUnit XML "
                   "(one test case per job and rule)")


def add_advanced_options(p) -> None:
    """Partitioning details, loads, tuning and tracing (docs/loads.md, docs/attribution.md)."""
    g = p.add_argument_group("advanced")
    g.add_argument("--housekeeping-cpus", metavar="CPUS",
                   help="CPUs for rtgauge itself and the engine's collector (default: neither rt nor load)")
    g.add_argument("--load-dir", metavar="DIR", help="directory the io load writes to (default: the database's)")
    g.add_argument("--allow-netns", action="store_true",
                   help="the net load may create two network namespaces joined by a veth pair")
    g.add_argument("--allow-fallback", action="store_true",
                   help="where real-time scheduling is refused (no CAP_SYS_NICE, no rtprio limit), measure as "
                        "SCHED_OTHER instead of refusing; every row is marked fallback, says nothing about real "
                        "time and is not rated (default: the profile's settings.allow_fallback)")
    g.add_argument("--resume", type=int, metavar="RUN", default=None,
                   help="measure on run RUN (interrupted, abandoned or failed) with its own profile, on the same "
                        "machine: jobs stored whole are kept, the others measured again, a sweep's stored probes "
                        "replayed (docs/studies.md); give the run's other options again")
    g.add_argument("--rt-throttling-off", action="store_true",
                   help="with --tuned: also switch RT throttling off, restored by a watchdog at the "
                        "run's expected end plus a margin even if rtgauge dies")
    g.add_argument("--trace-threshold-us", type=time_option("us"), metavar="N",
                   help="trace the measured CPUs and stop a latency job at its first wake-up later than N µs, "
                        "storing the end of the trace")
    g.add_argument("--attribute-threshold-us", type=time_option("us"), metavar="N",
                   help="with --attribute: the wake-ups later than N µs are attributed (default: the profile's "
                        "settings.attribute_threshold_us, else the run's p99.9); implies --attribute")
    g.add_argument("--mount-tracefs", action=argparse.BooleanOptionalAction, default=True,
                   help="mount tracefs at /sys/kernel/tracing when the split or the trace needs it and it is "
                        "not mounted (root; left mounted, as rtla does); --no-mount-tracefs refuses instead "
                        "(default: mount)")
