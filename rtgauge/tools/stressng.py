"""stress-ng's cyclic stressor's results, from its log.

`stress-ng --cyclic 1 --cyclic-dist NS ... --log-file FILE` (or its stderr) reports the
stressor's wake-up latency as text lines; stress-ng's `--yaml` file (0.15) holds only
bogo-op metrics, no latency, so the log is the one record of the figures. The lines, each
after stress-ng's prefix (`stress-ng: info:  [PID] `, absent with --log-brief):

    cyclic: sched SCHED_FIFO: 100000 ns delay, 10000 samples
    cyclic:   mean: 15532.04 ns, mode: 11449 ns
    cyclic:   min: 6730 ns, max: 776674 ns, std.dev. 14003.75
    cyclic: latency percentiles:
    cyclic:   25.00%:      11839 ns              (also 50, 75, 90, 95.40, 99, 99.5, 99.9, 99.99)
    cyclic: latency distribution (10000 ns intervals):     (only with --cyclic-dist)
    cyclic: (for the first 78 buckets of 78)
    cyclic: latency (ns)  frequency
    cyclic:            0        574                 (a bucket's lower edge, its count)
    cyclic:           ..         .. (all zeros hereafter)
    cyclic: Note: --cyclic-samples needed to be 25557 to capture all the data for this run
    ... metrc: [PID] cyclic   25557   3.00 ...      (bogo ops: the cycles run)

Only the first instance reports. The figures are those of the samples stress-ng kept (the
first --cyclic-samples, default 10,000), not of every cycle: the Note line and the bogo
ops say how many cycles ran. A sample beyond the last bucket printed is an overflow. The
percentiles are stress-ng's own, from the kept samples (exact, in ns). stress-ng sleeps a
relative interval (clock_nanosleep, nanosleep, pselect, an itimer or polling) and times
from its own clock read before the sleep. Read strictly: one sentence for anything else."""

from __future__ import annotations

import math
import re

from rtgauge.errors import UserError
from rtgauge.records import engine_document
from rtgauge.store import validate
from rtgauge.tools.adapter import Adapter, Found, Imported, foreign_job, no_facts
from rtgauge.tools.histogram import linear_histogram

COUNT_MAX = 2**53
BUCKETS_MAX = 100_000
PERCENTILES = {"50.00": "p50", "90.00": "p90", "99.00": "p99", "99.90": "p999", "99.99": "p9999"}

_PREFIX = re.compile(r"^(?:stress-ng: \w+:\s+\[\d+\]\s+)?cyclic: (.*)$", re.ASCII)
_HEAD = re.compile(r"^sched (\S+): (\d+) ns delay, (\d+) samples$", re.ASCII)
_MEAN = re.compile(r"^mean: (\d+(?:\.\d+)?) ns, mode: (-?\d+) ns$", re.ASCII)
_MINMAX = re.compile(r"^min: (-?\d+) ns, max: (-?\d+) ns, std\.dev\. (\d+(?:\.\d+)?)$", re.ASCII)
_PCT = re.compile(r"^(\d+\.\d+)%:\s+(-?\d+) ns$", re.ASCII)
_DIST = re.compile(r"^latency distribution \((\d+) ns intervals\):$", re.ASCII)
_ROW = re.compile(r"^(\d+)\s+(\d+)$", re.ASCII)
_NOTE = re.compile(r"^Note: --cyclic-samples needed to be (\d+) to capture all the data for this run$", re.ASCII)
_METRIC = re.compile(r"^stress-ng: metrc: \[\d+\] cyclic\s+(\d+)\s", re.ASCII)


def _number(text: str, what: str, line: int) -> int:
    value = int(text)
    if abs(value) > COUNT_MAX:
        raise ValueError(f"line {line}: the {what} {text[:30]} is beyond what rtgauge reads (2^53)")
    return value


def parse(text: str) -> dict:
    """The first cyclic report of a stress-ng log: {policy, delay_ns, samples, mean, mode,
    min, max, stddev, percentiles {label: ns}, bucket_ns, buckets {lower edge: count},
    needed (cycles run, from the Note or the bogo ops; None if neither)}."""
    out: dict = {"percentiles": {}, "buckets": {}, "bucket_ns": None, "needed": None, "bogo_ops": None}
    seen_head = False
    in_dist = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        metric = _METRIC.match(line)
        if metric:
            out["bogo_ops"] = _number(metric.group(1), "bogo ops count", number)
            continue
        m = _PREFIX.match(line)
        if not m:
            continue
        body = m.group(1).strip()
        head = _HEAD.match(body)
        if head:
            if seen_head:
                raise ValueError(f"line {number}: a second cyclic report; give the log of one stress-ng run")
            seen_head = True
            out.update(policy=head.group(1), delay_ns=_number(head.group(2), "delay", number),
                       samples=_number(head.group(3), "sample count", number))
            continue
        if not seen_head:
            continue
        if (found := _MEAN.match(body)):
            out["mean"], out["mode"] = float(found.group(1)), _number(found.group(2), "mode", number)
        elif (found := _MINMAX.match(body)):
            out["min"] = _number(found.group(1), "min", number)
            out["max"] = _number(found.group(2), "max", number)
            out["stddev"] = float(found.group(3))
        elif (found := _PCT.match(body)):
            out["percentiles"][found.group(1)] = _number(found.group(2), "percentile", number)
        elif (found := _DIST.match(body)):
            out["bucket_ns"] = _number(found.group(1), "bucket width", number)
            if out["bucket_ns"] < 1:
                raise ValueError(f"line {number}: a bucket width of 0 ns")
            in_dist = True
        elif (found := _NOTE.match(body)):
            out["needed"] = _number(found.group(1), "cycle count", number)
        elif in_dist and (found := _ROW.match(body)):
            edge, count = _number(found.group(1), "bucket edge", number), _number(found.group(2), "count", number)
            if out["bucket_ns"] and edge % out["bucket_ns"]:
                raise ValueError(f"line {number}: bucket edge {edge} ns is not a multiple of the "
                                 f"{out['bucket_ns']} ns interval")
            if edge in out["buckets"]:
                raise ValueError(f"line {number}: bucket {edge} ns twice")
            out["buckets"][edge] = count
            if len(out["buckets"]) > BUCKETS_MAX:
                raise ValueError(f"more than {BUCKETS_MAX:,} distribution buckets")
    if not seen_head:
        raise ValueError("there is no 'cyclic: sched POLICY: N ns delay, N samples' line (run stress-ng with "
                         "--cyclic 1, and keep its log)")
    for key in ("mean", "min", "max"):
        if key not in out:
            raise ValueError(f"the cyclic report has no {key} line")
    if out["samples"] < 1:
        raise ValueError("the cyclic report holds no samples")
    if out["min"] < 0:
        raise ValueError(f"the min latency {out['min']} ns is negative")
    if not out["min"] <= out["mean"] <= out["max"]:
        raise ValueError(f"the mean {out['mean']} ns is outside min {out['min']} and max {out['max']} ns")
    inside = sum(out["buckets"].values())
    if inside > out["samples"]:
        raise ValueError(f"the distribution holds {inside:,} samples but the report says {out['samples']:,}")
    if out["buckets"] and max((e for e, c in out["buckets"].items() if c), default=0) > out["max"]:
        raise ValueError("a distribution bucket lies above the max latency")
    values = [out["percentiles"][k] for k in sorted(out["percentiles"], key=float)]
    if any(not out["min"] <= v <= out["max"] for v in values) or values != sorted(values):
        raise ValueError("the percentiles are not ordered within min and max")
    return out


def document(report: dict) -> dict:
    """A parsed report as an engine-contract document (ns): ti and ti#0 (one instance)."""
    n = report["samples"]
    dist = {"unit": "ns", "count": n, "min": report["min"], "avg": report["mean"], "max": report["max"],
            "stddev": report["stddev"], "resolution_ns": 1}
    for label, name in PERCENTILES.items():
        if label in report["percentiles"]:
            dist[name] = report["percentiles"][label]
    width = report["bucket_ns"]
    if width and report["buckets"]:
        inside = sum(report["buckets"].values())
        dist["histogram"] = linear_histogram(report["buckets"], width, 1, n - inside if n > inside else 0)
    ran = max(x for x in (report["needed"], report["bogo_ops"], n) if x is not None)
    metrics = {"ti": dist, "ti#0": dict(dist), "cycles": {"unit": "count", "value": n},
               "cycles#0": {"unit": "count", "value": n}}
    policy = report["policy"].removeprefix("SCHED_").lower()
    return engine_document("latency", tool="stress-ng", ok=True,
                           params={"interval_us": report["delay_ns"] / 1000, "policy": policy, "samples_kept": n,
                                   "cycles_run": ran, "threads": 1},
                           env={"resolution_ns": 1, "policy": policy, "threads": [{"index": 0}]},
                           metrics=metrics)


def kept_note(report: dict) -> str:
    ran = max(x for x in (report["needed"], report["bogo_ops"], report["samples"]) if x is not None)
    if ran > report["samples"]:
        return (f"the figures are those of the first {report['samples']:,} of {ran:,} cycles "
                f"({math.floor(100 * report['samples'] / ran)} %): stress-ng keeps --cyclic-samples")
    return f"all {ran:,} cycles"


# -- the adapter: a --cyclic log, imported ---------------------------------------------------

def sniff(found: Found) -> bool:
    return found.is_text and (b"cyclic: " in found.head or found.head.startswith(b"stress-ng: "))


def read(found: Found, condition: str) -> Imported:
    """stress-ng's log of a --cyclic run (its --log-file, or its stderr kept)."""
    where = str(found.path)
    try:
        report = parse(validate.read_text_file(found.path))
        doc = document(report)
    except ValueError as e:
        raise UserError(f"{where} is not a stress-ng --cyclic log rtgauge reads: {e}; give the --log-file (or "
                        "stderr) of one `stress-ng --cyclic 1` run, unchanged.") from None
    validate.check_engine_document(doc, where)
    return Imported("stress-ng cyclic log", no_facts("none: a stress-ng log records no system facts"),
                    [(foreign_job("stress-ng-cyclic", condition, "stress-ng", []), doc)],
                    f"{report['policy']}, {report['delay_ns']:,} ns delay; {kept_note(report)}; the log "
                    "has no system facts or start time")


ADAPTER = Adapter("stress-ng", sniff, read)
