"""cyclictest (rt-tests) as a cross-check of the same condition.

cyclictest reports wake-up latency in whole microseconds: its per-thread histogram
(-h LIMIT, 1 µs buckets, values >= LIMIT counted as overflows), min, avg and max. We
turn that into the contract's distribution; percentiles come from the 1 µs buckets
(so their resolution is 1 µs), and a percentile that falls among the overflows is
reported as the exact max, an upper bound (flagged in the metric)."""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import subprocess
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from rtgauge.defaults import interval_us
from rtgauge.errors import UserError
from rtgauge.records import engine_document
from rtgauge.store import validate
from rtgauge.tools import histogram
from rtgauge.tools.adapter import Adapter, Found, Imported, always, foreign_job, program_on_target

# cyclictest's own default interval (its -i), for a command line that does not give one
CYCLICTEST_INTERVAL_US = 1000

US = 1000


def cyclictest_path() -> str | None:
    return shutil.which("cyclictest")


def local_unavailable() -> str | None:
    """Why cyclictest cannot run here (None: it can)."""
    return None if cyclictest_path() else "cyclictest is not installed (apt-get install rt-tests)"


def target_unavailable(session) -> str | None:
    """Why it cannot run on a board (following the board's address; None: it can)."""
    return None if session.has("cyclictest") else "has no cyclictest (rt-tests)"


def command(options: dict, cpus: list[int], json_path: str, exe: str | None = None) -> list[str]:
    """The cyclictest command equivalent to an engine latency job's options (exe: the
    program to run, default the one installed here)."""
    exe = exe or cyclictest_path()
    if not exe:
        raise UserError("cyclictest is not installed; install it with `apt-get install rt-tests`.")
    interval = interval_us(options)
    duration = float(options.get("duration-s", 10))
    policy = str(options.get("policy", "fifo"))
    prio = int(options.get("priority", 80)) if policy != "other" else 0
    hist = int(options.get("histogram", 20000))
    # --loops, not --duration: cyclictest's --duration runs from its own start, its setup
    # included, which on a slow or loaded system (a board under software emulation with a
    # CPU load) took longer than a short job, so its thread measured nothing; the engine's
    # duration counts wake-ups from the first, and so do the loops (the job's time limit
    # bounds it as it bounds the engine)
    loops = max(1, math.ceil(duration * 1e6 / interval))
    return [exe, "--mlockall", "--quiet", f"--priority={prio}", f"--policy={policy}",
            f"--interval={interval}", f"--loops={loops}",
            f"--affinity={','.join(map(str, cpus))}", f"--threads={len(cpus)}",
            f"--histogram={hist}", f"--json={json_path}"]


# cyclictest prints a thread's avg with printf's %.2f of sum/cycles: a thread that measured
# no cycle (stopped before its first wake-up) gets "nan" or "-nan" (glibc), which is not JSON
NOT_A_NUMBER = re.compile(rb'^(\s*"avg": )-?(?:nan|inf)(,?\s*)$', re.M | re.I)


def readable_json(data: bytes) -> bytes:
    """cyclictest's --json bytes as strict JSON: the avg of a thread without a cycle
    (nan) becomes null; nothing else is touched."""
    return NOT_A_NUMBER.sub(rb"\1null\2", data)


def unit_of_json(raw: dict) -> int:
    """ns per unit of a --json file's latencies and histogram bins: cyclictest -N writes
    nanoseconds and says so (`"resolution_in_ns": 1`); otherwise microseconds."""
    return 1 if raw.get("resolution_in_ns") == 1 else US


def to_document(raw: dict, options: dict, cpus: list[int], status: int, interrupted: bool) -> dict:
    """cyclictest's --json output as an engine-contract document (its units read from
    the file: unit_of_json; a histogram limit of 0: the file has no histogram)."""
    threads = raw.get("thread", {})
    unit = unit_of_json(raw)
    hist_limit_us = int(options.get("histogram", 20000))
    metrics: dict = {}
    merged_counts: dict[int, int] = {}
    merged = {"cycles": 0, "overflow": 0, "min": None, "max": None, "sum_us": 0.0}
    env_threads = []
    for key in sorted(threads, key=int):
        t = threads[key]
        counts = {int(k): int(v) for k, v in t.get("histogram", {}).items()}
        cycles = int(t.get("cycles", 0))
        if not cycles:           # its min and max are cyclictest's initial values, not measured
            t = {**t, "min": None, "max": None, "avg": None}
        overflow = max(0, cycles - sum(counts.values()))
        dist = distribution(counts, cycles, overflow, t.get("min"), t.get("avg"), t.get("max"),
                            hist_limit_us, unit)
        metrics[f"ti#{key}"] = dist
        metrics[f"cycles#{key}"] = {"unit": "count", "value": cycles}
        env_threads.append({"index": int(key), "cpu": t.get("cpu")})
        for b, c in counts.items():
            merged_counts[b] = merged_counts.get(b, 0) + c
        merged["cycles"] += cycles
        merged["overflow"] += overflow
        merged["sum_us"] += float(t.get("avg") or 0) * cycles
        if t.get("min") is not None:
            merged["min"] = t["min"] if merged["min"] is None else min(merged["min"], t["min"])
        if t.get("max") is not None:
            merged["max"] = t["max"] if merged["max"] is None else max(merged["max"], t["max"])
    if merged["cycles"]:
        avg = merged["sum_us"] / merged["cycles"]
        metrics["ti"] = distribution(merged_counts, merged["cycles"], merged["overflow"],
                                     merged["min"], avg, merged["max"], hist_limit_us, unit)
    metrics["cycles"] = {"unit": "count", "value": merged["cycles"]}
    ok = status == 0 or interrupted
    doc = engine_document(
        "latency", tool="cyclictest", ok=ok and bool(merged["cycles"]), interrupted=interrupted,
        params={"interval_us": interval_us(options),
                "duration_s": float(options.get("duration-s", 10)),
                "policy": str(options.get("policy", "fifo")),
                "priority": int(options.get("priority", 80)), "cpus": cpus,
                "histogram": hist_limit_us},
        env={"tool_version": raw.get("rt_test_version:") or raw.get("rt_test_version"),
             "cmdline": raw.get("cmdline:") or raw.get("cmdline"),
             "resolution_ns": unit, "threads": env_threads,
             "policy": str(options.get("policy", "fifo")),
             "priority": int(options.get("priority", 80)), "cpus": cpus},
        metrics=metrics)
    if not doc["ok"] and ok and not merged["cycles"]:
        doc["error"] = ("cyclictest measured no wake-up: its thread was stopped before its first one (a system "
                        "too slow or loaded for the job's length); give the job a longer duration-s")
    elif not doc["ok"]:
        doc["error"] = f"cyclictest exited with status {status} and measured {merged['cycles']} cycles"
    return doc


def distribution(counts: dict[int, int], cycles: int, overflow: int, vmin, vavg, vmax,
                 limit_us: int, unit_ns: int = US) -> dict:
    """Contract distribution (ns) from buckets of one unit (1 µs for cyclictest; a tool
    that counts in ns gives unit_ns=1) plus overflows from limit_us units on; min, avg and
    max are in the same unit (cyclictest's whole units: a percentile is its bucket's
    lower edge; the spread only when no sample is an overflow). A limit of 0 and no
    bucket: the file has no histogram, so min, avg and max only."""
    return histogram.distribution(counts, cycles, overflow, int(vmin) if vmin is not None else None, vavg,
                                  int(vmax) if vmax is not None else None, width=1, unit_ns=unit_ns,
                                  overflow_from=limit_us, edge="low", spread="complete", histogram=limit_us > 0)


def run(options: dict, cpus: list[int], json_path: str, popen_kwargs: dict) -> subprocess.Popen:
    return subprocess.Popen(command(options, cpus, json_path), **popen_kwargs)


def load_json(path: str) -> dict:
    with open(path, "rb") as f:
        return json.loads(readable_json(f.read()))


# -- cyclictest's files: --json and -h/--histfile ---------------------------------------
#
# Both are read strictly and with bounds (a file from another machine is data, not
# trusted): counts and cycles at most COUNT_MAX (exact in a float, which the statistics
# use), bins at most cyclictest's own HIST_MAX (1,000,000 µs), at most THREADS_MAX
# threads; anything else is one sentence naming the file and the place.

HIST_MAX_US = 1_000_000
COUNT_MAX = 2**53
THREADS_MAX = 4096
NUMBER = {"type": "number", "minimum": 0, "maximum": COUNT_MAX}
COUNT = {"type": "integer", "minimum": 0, "maximum": COUNT_MAX}
JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "cyclictest --json output (rt-tests 2.x)",
    "type": "object",
    "required": ["thread"],
    "properties": {
        "thread": {"type": "object", "minProperties": 1, "maxProperties": THREADS_MAX,
                   "propertyNames": {"pattern": "^[0-9]{1,4}$"},
                   "additionalProperties": {
                       "type": "object", "required": ["cycles"],
                       "properties": {
                           "histogram": {"type": "object", "maxProperties": HIST_MAX_US,
                                         "propertyNames": {"pattern": "^[0-9]{1,7}$"},
                                         "additionalProperties": COUNT},
                           "cycles": COUNT, "min": NUMBER, "max": NUMBER, "avg": NUMBER,
                           "cpu": {"type": ["integer", "null"], "minimum": -1, "maximum": 1 << 20},
                           "node": {"type": ["integer", "null"]}}}},
        "sysinfo": {"type": "object", "properties": {
            k: {"type": "string", "maxLength": 200} for k in ("sysname", "nodename", "release", "version",
                                                                "machine")}},
        "return_code": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
        "start_time": {"type": "string", "maxLength": 100},
        "end_time": {"type": "string", "maxLength": 100},
        "cmdline:": {"type": "string", "maxLength": 10_000},
        "rt_test_version:": {"type": "string", "maxLength": 100},
    },
}


def options_from_cmdline(cmdline: str | None) -> dict:
    """The options a cyclictest command line gave that the document records (interval,
    priority, policy, histogram limit, duration); cyclictest's defaults otherwise."""
    try:
        words = shlex.split(cmdline or "")
    except ValueError:
        words = (cmdline or "").split()
    names = {"-i": "interval-us", "--interval": "interval-us", "-p": "priority", "--priority": "priority",
             "-h": "histogram", "--histogram": "histogram", "-H": "histogram", "--histofall": "histogram",
             "--policy": "policy", "-y": "policy", "-D": "duration", "--duration": "duration"}
    found: dict = {}
    i = 1
    while i < len(words):
        word, value = words[i], None
        if word.startswith("--") and "=" in word:
            word, value = word.split("=", 1)
        elif word[:2] in names and len(word) > 2 and not word.startswith("--"):
            word, value = word[:2], word[2:]
        if word in names:
            if value is None and i + 1 < len(words):
                value = words[i + 1]
                i += 1
            found[names[word]] = value
        i += 1
    options: dict = {"interval-us": CYCLICTEST_INTERVAL_US, "priority": 0, "policy": "other"}
    for key in ("interval-us", "priority", "histogram"):
        try:
            options[key] = int(found[key])
        except (KeyError, ValueError):
            pass
    if options["priority"] > 0:
        options["policy"] = "fifo"
    if isinstance(found.get("policy"), str) and found["policy"] in ("other", "fifo", "rr", "batch", "idle"):
        options["policy"] = found["policy"]
    return options


def facts_of_json(raw: dict) -> dict:
    """System facts where the file has them (cyclictest's sysinfo)."""
    info = raw.get("sysinfo") if isinstance(raw.get("sysinfo"), dict) else {}
    return {"hostname": info.get("nodename"), "machine_id": None, "kernel_release": info.get("release"),
            "kernel_version": info.get("version"), "arch": info.get("machine"), "cpu_model": None, "cpus": None,
            "preempt_model": None, "realtime": bool(info["realtime"]) if isinstance(info.get("realtime"), int) else None,
            "facts_source": "cyclictest --json sysinfo (imported; rtgauge doctor did not run there)"}


def document_of_json(raw: dict) -> dict:
    """A cyclictest --json file (already strictly parsed and checked against JSON_SCHEMA)
    as an engine-contract document."""
    options = options_from_cmdline(raw.get("cmdline:") or raw.get("cmdline"))
    threads = raw["thread"]
    cpus = [t.get("cpu") for _, t in sorted(threads.items(), key=lambda kv: int(kv[0]))
            if isinstance(t.get("cpu"), int)]
    if "histogram" not in options:
        top = max((int(b) for t in threads.values() for b in (t.get("histogram") or {})), default=-1)
        options["histogram"] = top + 1
    for key, t in threads.items():
        inside = sum((t.get("histogram") or {}).values())
        if inside > t["cycles"]:
            raise ValueError(f"thread {key} has {inside:,} values in its histogram but {t['cycles']:,} cycles")
        top = max((int(b) for b, c in (t.get("histogram") or {}).items() if c), default=None)
        if top is not None and (t.get("max") is None or t["max"] < top):
            raise ValueError(f"thread {key}'s max latency {t.get('max')} µs is below its highest histogram bin "
                             f"({top} µs)")
    doc = to_document(raw, options, cpus, int(raw.get("return_code") or 0), interrupted=False)
    doc["params"].pop("duration_s", None)
    doc["params"]["histogram"] = options["histogram"]
    return doc


EXACT = {"rtgauge exact min ns": "min", "rtgauge exact avg ns": "avg", "rtgauge exact max ns": "max"}


def parse_histfile(text: str, where: str) -> list[dict]:
    """cyclictest's -h/--histfile layout, one or more blocks: a "# Histogram" line, rows
    "%06d count<TAB>count..." (a last column with -H/--histofall, the sum of the
    threads), then "# Total:", "# Min Latencies:", "# Avg Latencies:", "# Max Latencies:",
    "# Histogram Overflows:" (one value per thread; all but Max may be missing) and
    "# Thread N:" overflow cycle lists. An rtgauge export adds "# rtgauge measurement
    NAME@CONDITION" before its block and "# rtgauge exact min|avg|max ns:" lines (the
    figures cyclictest's whole µs cannot carry); other readers skip them as comments.
    Only the non-zero counts are kept (memory follows the samples, not the table).
    Returns one dict per block: {label, counts (per thread: {bin: count}), min, avg, max,
    overflow (lists per thread, None where the file has no such line), exact, limit_us}."""
    blocks: list[dict] = []
    block = None
    label = None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("# rtgauge measurement "):
            label = line[len("# rtgauge measurement "):][:200]
            continue
        if line == "# Histogram":
            block = {"label": label, "cells": [], "widths": set(), "rows": 0, "last": -1, "footer": {},
                     "exact": {}, "line": number}
            blocks.append(block)
            label = None
            continue
        if block is None:
            continue                      # cyclictest's own lines before the histogram
        if line.startswith("#"):
            key, sep, rest = line[1:].partition(":")
            key = key.strip()
            if sep and key in ("Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows"):
                try:
                    block["footer"][key] = [_bounded_int(v) for v in rest.split()]
                except ValueError as e:
                    raise ValueError(f"line {number}: {e}") from None
            elif sep and key in EXACT:
                try:
                    block["exact"][EXACT[key]] = [None if v == "-" else _finite(v) for v in rest.split()]
                except ValueError as e:
                    raise ValueError(f"line {number}: {e}") from None
            continue
        fields = line.split()
        try:
            values = [_bounded_int(v) for v in fields]
        except ValueError as e:
            raise ValueError(f"line {number}: {e}") from None
        if len(values) < 2 or values[0] >= HIST_MAX_US:
            raise ValueError(f"line {number} is not a histogram row (a bin below {HIST_MAX_US:,} µs and its counts)")
        if len(values) - 1 > THREADS_MAX + 1:
            raise ValueError(f"line {number} has {len(values) - 1:,} counts, more than {THREADS_MAX:,} threads")
        block["rows"] += 1
        if block["rows"] > HIST_MAX_US:
            raise ValueError(f"more than {HIST_MAX_US:,} histogram rows")
        block["widths"].add(len(values) - 1)
        block["last"] = values[0]
        block["cells"].extend((values[0], t, c) for t, c in enumerate(values[1:]) if c)
    if not blocks:
        raise ValueError("there is no '# Histogram' line")
    out = []
    for b in blocks:
        footer = b["footer"]
        if "Max Latencies" not in footer:
            raise ValueError(f"the histogram at line {b['line']} has no '# Max Latencies' line")
        n = len(footer["Max Latencies"])
        widths = b["widths"]
        allowed = (n, n + 1) if n > 1 else (n,)      # -H/--histofall adds a sum column for 2+ threads
        if not n or n > THREADS_MAX or any(w not in allowed for w in widths):
            raise ValueError(f"the histogram at line {b['line']} has rows of {sorted(widths)} counts for "
                             f"{n} threads")
        for key in ("Min Latencies", "Avg Latencies", "Histogram Overflows", "Total"):
            if key in footer and len(footer[key]) not in (n, n + 1):
                raise ValueError(f"'# {key}' of the histogram at line {b['line']} has {len(footer[key])} "
                                 f"values for {n} threads")
        for key, values in b["exact"].items():
            if len(values) != n:
                raise ValueError(f"'# rtgauge exact {key} ns' of the histogram at line {b['line']} has "
                                 f"{len(values)} values for {n} threads")
        counts = [dict() for _ in range(n)]
        for bin_, t, c in b["cells"]:
            if t < n:
                counts[t][bin_] = counts[t].get(bin_, 0) + c
        out.append({"label": b["label"], "counts": counts,
                    "min": (footer.get("Min Latencies") or [None] * n)[:n],
                    "avg": (footer.get("Avg Latencies") or [None] * n)[:n], "max": footer["Max Latencies"][:n],
                    "overflow": (footer.get("Histogram Overflows") or [0] * n)[:n], "exact": b["exact"],
                    "limit_us": b["last"] + 1})
    return out


def _finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0 or v > COUNT_MAX or len(text) > 40:
        raise ValueError(f"{text[:40]!r} is not a latency rtgauge reads (a finite number of ns, not negative)")
    return v


def _bounded_int(text: str) -> int:
    if not text.isdigit() or len(text) > 16 or int(text) > COUNT_MAX:
        raise ValueError(f"{text[:40]!r} is not a count rtgauge reads (a whole number up to 2^53)")
    return int(text)


def document_of_histfile(block: dict) -> dict:
    """One histfile block as an engine-contract document. The layout has no interval,
    priority or cycle count: the sample count is the histogram's total plus overflows;
    min, avg (whole µs, truncated by cyclictest) and max come from the footer, or from
    the "# rtgauge exact" lines where an rtgauge export wrote them (then exact, in ns);
    a footer line the file lacks leaves that figure absent. A block may give "unit_ns"
    (default 1 µs): the unit of its buckets, limit, min, avg and max (jitterdebugger's
    per-CPU results have the same shape, in µs or ns)."""
    unit = block.get("unit_ns", US)
    exact = block.get("exact") or {}
    metrics: dict = {}
    merged_counts: dict[int, int] = {}
    total = overflow_all = 0
    weighted = 0.0
    limit = block["limit_us"]
    figures = {"min": [], "avg": [], "max": []}
    for t, counts in enumerate(block["counts"]):
        overflow = block["overflow"][t]
        cycles = sum(counts.values()) + overflow
        top = max(counts, default=None)
        vmax = block["max"][t]
        if cycles and top is not None and vmax < top:
            raise ValueError(f"thread {t}'s max latency {vmax} µs is below its highest histogram bin ({top} µs)")
        metrics[f"ti#{t}"] = dist = distribution(counts, cycles, overflow, block["min"][t] if cycles else None,
                                                 block["avg"][t] if cycles else None, vmax if cycles else None,
                                                 limit, unit)
        for key in ("min", "avg", "max"):      # the exact figures an rtgauge export kept (ns)
            if key in exact and cycles:
                dist[key] = exact[key][t]
        if cycles:
            for key in figures:
                figures[key].append(dist.get(key))
        metrics[f"cycles#{t}"] = {"unit": "count", "value": cycles}
        for b, c in counts.items():
            merged_counts[b] = merged_counts.get(b, 0) + c
        total += cycles
        overflow_all += overflow
        if dist.get("avg") is not None:
            weighted += dist["avg"] * cycles
    if total:
        ti = distribution(merged_counts, total, overflow_all, None, None, None, limit, unit)
        known = {k: [v for v in vs if v is not None] for k, vs in figures.items()}
        ti["min"] = min(known["min"]) if len(known["min"]) == len(figures["min"]) else None
        ti["max"] = max(known["max"]) if len(known["max"]) == len(figures["max"]) else None
        ti["avg"] = weighted / total if len(known["avg"]) == len(figures["avg"]) else None
        if ti["max"] is not None:         # a percentile among the overflows is the max, a bound
            ti.update({k: v for k, v in distribution(merged_counts, total, overflow_all, None, None,
                                                     math.ceil(ti["max"] / unit), limit, unit).items()
                       if k.startswith("p") or k == "upper_bounds"})
        metrics["ti"] = ti
    metrics["cycles"] = {"unit": "count", "value": total}
    return engine_document("latency", tool="cyclictest", ok=bool(total),
                           error=None if total else "the histogram holds no samples",
                           params={"histogram": limit, "threads": len(block["counts"])},
                           env={"resolution_ns": unit, "threads": [{"index": t} for t in range(len(block["counts"]))]},
                           metrics=metrics)


EXPORT_CELLS_MAX = 1 << 24      # rows × threads of one exported histogram (~120 MB of text)


def histfile_plan(columns: list[dict]) -> dict:
    """What the -h/--histfile layout of one measurement needs, decided before anything
    is written: per-thread 1 µs buckets and overflows, the row count (the histogram's
    own limit where it had overflows, else up to the max's µs). Refused (ValueError, one
    sentence) when a column has no histogram (min/avg/max only: the layout would invent
    one) or the table would pass EXPORT_CELLS_MAX cells."""
    for c in columns:
        if c.get("count") and not (c.get("histogram") or {}).get("bins") and not (c.get("linear") or {}).get("counts") \
                and not (c.get("histogram") or {}).get("overflow"):
            raise ValueError("it has no histogram (min, avg and max only), and the layout is a histogram")
    per_thread = [_us_buckets(c) for c in columns]
    maxes = [int(c["max"]) // US if c.get("max") is not None else 0 for c in columns]
    bounds = [int(c["histogram"]["overflow_from_ns"]) // US for c in columns
              if isinstance(c.get("histogram"), dict) and c["histogram"].get("overflow_from_ns")]
    if bounds:      # a histogram with overflows (cyclictest's own -h LIMIT): keep its limit
        limit = min(HIST_MAX_US, max(1, min(bounds)))
    else:
        limit = min(HIST_MAX_US, max([m + 1 for m in maxes] + [max(b, default=-1) + 1 for b, _ in per_thread] + [1]))
    if limit * len(columns) > EXPORT_CELLS_MAX:
        raise ValueError(f"its table would be {limit:,} rows × {len(columns):,} threads, more than "
                         f"{EXPORT_CELLS_MAX:,} cells")
    overflows = [o for _, o in per_thread]
    for t, (buckets, _) in enumerate(per_thread):
        for b in [b for b in buckets if b >= limit]:
            overflows[t] += buckets.pop(b)
    return {"buckets": [b for b, _ in per_thread], "overflows": overflows, "limit": limit, "maxes": maxes}


def histfile_lines(columns: list[dict], plan: dict | None = None):
    """cyclictest's -h/--histfile layout for one measurement, line by line (a row at a
    time: memory follows the samples, not the table): columns are per-thread
    distributions (ns) as rtgauge stores them. Values become whole µs the way cyclictest
    makes them (truncated); a
    log-linear bin wider than 1 µs is counted in the µs of its upper edge (capped at the
    max), so the layout never shows a latency lower than measured. The exact min, avg
    and max (ns) follow as "# rtgauge exact" comment lines, which `rtgauge import` reads
    and cyclictest's readers skip."""
    plan = plan or histfile_plan(columns)
    buckets, overflows, limit = plan["buckets"], plan["overflows"], plan["limit"]
    totals = [0] * len(columns)
    yield "# Histogram\n"
    for i in range(limit):
        row = [b.get(i, 0) for b in buckets]
        for t, c in enumerate(row):
            totals[t] += c
        yield f"{i:06d} " + "\t".join(f"{c:06d}" for c in row) + "\n"

    def us(v):
        return 0 if v is None else int(v) // US
    yield "# Total:" + "".join(f" {t:09d}" for t in totals) + "\n"
    for key, name in (("min", "Min"), ("avg", "Avg")):    # a figure the data lack is left out, not 0
        if all(c.get(key) is not None for c in columns):
            yield f"# {name} Latencies:" + "".join(f" {us(c.get(key)):05d}" for c in columns) + "\n"
    yield "# Max Latencies:" + "".join(f" {m:05d}" for m in plan["maxes"]) + "\n"
    yield "# Histogram Overflows:" + "".join(f" {o:05d}" for o in overflows) + "\n"
    yield "# Histogram Overflow at cycle number:\n"
    for t, o in enumerate(overflows):
        yield f"# Thread {t}:" + (f" # {o:05d} others" if o else "") + "\n"
    for key in ("min", "avg", "max"):
        yield f"# rtgauge exact {key} ns:" + "".join(
            " -" if c.get(key) is None else f" {c[key]!r}" for c in columns) + "\n"
    yield "\n"                    # cyclictest ends its histfile with an empty line


def histfile_text(columns: list[dict]) -> str:
    """histfile_lines as one text (a small measurement)."""
    return "".join(histfile_lines(columns))


def _us_buckets(metric: dict) -> tuple[dict[int, int], int]:
    """1 µs buckets and overflow count of a stored distribution: its linear histogram
    when it has one (exact), else its log-linear bins."""
    linear = metric.get("linear") or {}
    if isinstance(linear.get("counts"), list) and linear.get("bucket_ns") == US:
        return ({i: c for i, c in enumerate(linear["counts"]) if c}, int(linear.get("overflow") or 0))
    hist = metric.get("histogram") or {}
    vmax = metric.get("max")
    out: dict[int, int] = {}
    for lo, hi, count in hist.get("bins") or []:
        top = min(hi, vmax) if isinstance(vmax, (int, float)) else hi
        b = max(int(lo), int(top)) // US
        out[b] = out.get(b, 0) + int(count)
    return out, int(hist.get("overflow") or 0)


# -- the adapter: cyclictest --json, run as a cross-check and imported ---------------------

def is_json_output(doc) -> bool:
    return isinstance(doc, dict) and "thread" in doc and ("rt_test_version:" in doc or "file_version" in doc
                                                         or "num_threads" in doc)


def sniff(found: Found) -> bool:
    return found.is_json and is_json_output(found.data)


def read(found: Found, condition: str) -> Imported:
    """A --json file measured elsewhere: its document, its sysinfo as the facts, its start
    and end times."""
    data, where = found.data, str(found.path)
    validate.check_schema(data, JSON_SCHEMA, where, "cyclictest --json file",
                          "give cyclictest's --json output unchanged.")
    validate.check_no_nul(data, where)
    try:
        doc = document_of_json(data)
    except ValueError as e:
        raise UserError(f"{where} is not a valid cyclictest --json file: {e}; give cyclictest's --json output "
                        "unchanged.") from None
    validate.check_engine_document(doc, where)
    cmdline = str(data.get("cmdline:") or "")
    job = foreign_job("cyclictest", condition, "cyclictest", cmdline.split()[:200])
    version = data.get("rt_test_version:")

    def when(key):
        try:
            return parsedate_to_datetime(data[key]).astimezone(timezone.utc).isoformat(timespec="seconds")
        except (KeyError, TypeError, ValueError, IndexError):
            return None
    start, end = when("start_time"), when("end_time")
    if start and end:
        job["duration_s"] = max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())
    job["started_at"] = start
    job["exit_status"] = data.get("return_code")
    return Imported("cyclictest --json", facts_of_json(data), [(job, doc)],
                    ", ".join(x for x in (f"rt-tests {version}" if version else "",
                                          f"command: {cmdline[:300]}" if cmdline else "") if x),
                    started=start, finished=end)


def job_command(job, out_path: str, extra: list[str] = ()) -> list[str]:
    return command(job.options, job.cpus, out_path)


def realtime_priority(job) -> int:
    """cyclictest runs at SCHED_FIFO at the job's priority, 80 unless given, and has no
    fallback without real time."""
    return int(job.options.get("priority", 80))


def board_command(job, out_path: str) -> list[str]:
    return command(job.options, job.cpus, out_path, exe="cyclictest")


def job_document(raw, job, where: str, status: int, interrupted: bool) -> dict:
    """A cross-check's --json result (parsed) as the job's document."""
    if not isinstance(raw, dict):
        raise UserError(f"{where} is not a cyclictest --json object")
    try:
        return to_document(raw, job.options, job.cpus, status, interrupted)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
        raise UserError(f"{where} is not shaped as cyclictest --json writes it") from None


ADAPTER = Adapter("cyclictest", sniff, read, command=job_command, to_document=job_document, readable=readable_json,
                  local_unavailable=local_unavailable, target_unavailable=target_unavailable,
                  realtime_priority=realtime_priority, takes_cpus=always,
                  run_on_target=program_on_target(board_command, readable_json, ["cyclictest"]))
