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
import shutil
import subprocess

from rtgauge.errors import UserError

PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999))
US = 1000


def cyclictest_path() -> str | None:
    return shutil.which("cyclictest")


def command(options: dict, cpus: list[int], json_path: str, exe: str | None = None) -> list[str]:
    """The cyclictest command equivalent to an engine latency job's options (exe: the
    program to run, default the one installed here)."""
    exe = exe or cyclictest_path()
    if not exe:
        raise UserError("cyclictest is not installed; install it with `apt-get install rt-tests`.")
    interval = int(options.get("interval-us", 1000))
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


def to_document(raw: dict, options: dict, cpus: list[int], status: int, interrupted: bool) -> dict:
    """cyclictest's --json output as an engine-contract document."""
    threads = raw.get("thread", {})
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
                            hist_limit_us)
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
                                     merged["min"], avg, merged["max"], hist_limit_us)
    metrics["cycles"] = {"unit": "count", "value": merged["cycles"]}
    ok = status == 0 or interrupted
    doc = {
        "schema": 1, "test": "latency", "tool": "cyclictest", "ok": ok and bool(merged["cycles"]),
        "interrupted": interrupted,
        "params": {"interval_us": int(options.get("interval-us", 1000)),
                   "duration_s": float(options.get("duration-s", 10)),
                   "policy": str(options.get("policy", "fifo")),
                   "priority": int(options.get("priority", 80)), "cpus": cpus,
                   "histogram": hist_limit_us},
        "env": {"tool_version": raw.get("rt_test_version:") or raw.get("rt_test_version"),
                "cmdline": raw.get("cmdline:") or raw.get("cmdline"),
                "resolution_ns": US, "threads": env_threads,
                "policy": str(options.get("policy", "fifo")),
                "priority": int(options.get("priority", 80)), "cpus": cpus},
        "metrics": metrics, "verdicts": {},
    }
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
    max are in the same unit."""
    total = sum(counts.values())
    mean_in = sum((b + 0.5) * c for b, c in counts.items()) / total if total else 0.0
    var_in = sum(c * ((b + 0.5) - mean_in) ** 2 for b, c in counts.items()) / total if total else 0.0
    stats = {"unit": "ns", "count": cycles,
             "min": int(vmin) * unit_ns if vmin is not None else None,
             "avg": float(vavg) * unit_ns if vavg is not None else None,
             "stddev": math.sqrt(var_in) * unit_ns,
             "max": int(vmax) * unit_ns if vmax is not None else None,
             "resolution_ns": unit_ns}
    bounded = []
    for name, q in PERCENTILES:
        v, is_bound = _percentile_us(counts, overflow, cycles, q, vmax)
        stats[name] = v * unit_ns if v is not None else None
        if is_bound:
            bounded.append(name)
    if bounded:
        stats["upper_bounds"] = bounded
    stats["histogram"] = {"scheme": "linear", "bucket_ns": unit_ns,
                          "bins": [[b * unit_ns, (b + 1) * unit_ns - 1, c] for b, c in sorted(counts.items()) if c]}
    if overflow:
        stats["histogram"]["overflow"] = overflow
        stats["histogram"]["overflow_from_ns"] = limit_us * unit_ns
    return stats


def _percentile_us(counts: dict[int, int], overflow: int, cycles: int, q: float, vmax):
    """Nearest-rank percentile: the bucket holding the ceil(q*n)-th value."""
    if cycles <= 0:
        return None, False
    rank = max(1, math.ceil(q * cycles))
    seen = 0
    for b in sorted(counts):
        seen += counts[b]
        if seen >= rank:
            return b, False
    return (int(vmax) if vmax is not None else None), True


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
    import shlex
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
    options: dict = {"interval-us": 1000, "priority": 0, "policy": "other"}
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


def parse_histfile(text: str, where: str) -> list[dict]:
    """cyclictest's -h/--histfile layout, one or more blocks (an rtgauge export holds one
    per measurement): a "# Histogram" line, rows "%06d count<TAB>count..." (a last column
    with -H/--histofall, the sum of the threads), then "# Total:", "# Min Latencies:",
    "# Avg Latencies:", "# Max Latencies:", "# Histogram Overflows:" (one value per
    thread) and "# Thread N:" overflow cycle lists. Returns one dict per block:
    {label, counts (per thread: {bin: count}), min, avg, max, overflow (lists per thread)}."""
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
            block = {"label": label, "rows": [], "footer": {}, "line": number}
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
            continue
        fields = line.split()
        try:
            values = [_bounded_int(v) for v in fields]
        except ValueError as e:
            raise ValueError(f"line {number}: {e}") from None
        if len(values) < 2 or values[0] >= HIST_MAX_US:
            raise ValueError(f"line {number} is not a histogram row (a bin below {HIST_MAX_US:,} µs and its counts)")
        block["rows"].append(values)
        if len(block["rows"]) > HIST_MAX_US:
            raise ValueError(f"more than {HIST_MAX_US:,} histogram rows")
    if not blocks:
        raise ValueError("there is no '# Histogram' line")
    out = []
    for b in blocks:
        footer = b["footer"]
        if "Max Latencies" not in footer:
            raise ValueError(f"the histogram at line {b['line']} has no '# Max Latencies' line")
        n = len(footer["Max Latencies"])
        widths = {len(r) - 1 for r in b["rows"]}
        allowed = (n, n + 1) if n > 1 else (n,)      # -H/--histofall adds a sum column for 2+ threads
        if not n or n > THREADS_MAX or any(w not in allowed for w in widths):
            raise ValueError(f"the histogram at line {b['line']} has rows of {sorted(widths)} counts for "
                             f"{n} threads")
        for key in ("Min Latencies", "Avg Latencies", "Histogram Overflows", "Total"):
            if key in footer and len(footer[key]) not in (n, n + 1):
                raise ValueError(f"'# {key}' of the histogram at line {b['line']} has {len(footer[key])} "
                                 f"values for {n} threads")
        counts = [dict() for _ in range(n)]
        for row in b["rows"]:
            for t in range(n):
                if row[1 + t]:
                    counts[t][row[0]] = counts[t].get(row[0], 0) + row[1 + t]
        overflow = (footer.get("Histogram Overflows") or [0] * n)[:n]
        limit = (b["rows"][-1][0] + 1) if b["rows"] else 0
        out.append({"label": b["label"], "counts": counts, "min": (footer.get("Min Latencies") or [None] * n)[:n],
                    "avg": (footer.get("Avg Latencies") or [None] * n)[:n], "max": footer["Max Latencies"][:n],
                    "overflow": overflow, "limit_us": limit})
    return out


def _bounded_int(text: str) -> int:
    if not text.isdigit() or len(text) > 16 or int(text) > COUNT_MAX:
        raise ValueError(f"{text[:40]!r} is not a count rtgauge reads (a whole number up to 2^53)")
    return int(text)


def document_of_histfile(block: dict) -> dict:
    """One histfile block as an engine-contract document. The layout has no interval,
    priority or cycle count: the sample count is the histogram's total plus overflows;
    min, avg (whole µs, truncated by cyclictest) and max come from the footer. A block
    may give "unit_ns" (default 1 µs): the unit of its buckets, limit, min, avg and max
    (jitterdebugger's per-CPU results have the same shape, in µs or ns)."""
    unit = block.get("unit_ns", US)
    metrics: dict = {}
    merged_counts: dict[int, int] = {}
    total = overflow_all = 0
    weighted = 0.0
    limit = block["limit_us"]
    for t, counts in enumerate(block["counts"]):
        overflow = block["overflow"][t]
        cycles = sum(counts.values()) + overflow
        top = max(counts, default=None)
        vmax = block["max"][t]
        if cycles and top is not None and vmax < top:
            raise ValueError(f"thread {t}'s max latency {vmax} µs is below its highest histogram bin ({top} µs)")
        metrics[f"ti#{t}"] = distribution(counts, cycles, overflow, block["min"][t] if cycles else None,
                                          block["avg"][t] if cycles else None, vmax if cycles else None, limit,
                                          unit)
        metrics[f"cycles#{t}"] = {"unit": "count", "value": cycles}
        for b, c in counts.items():
            merged_counts[b] = merged_counts.get(b, 0) + c
        total += cycles
        overflow_all += overflow
        if block["avg"][t] is not None:
            weighted += block["avg"][t] * cycles
    if total:
        live = [t for t in range(len(block["counts"])) if metrics[f"cycles#{t}"]["value"]]
        metrics["ti"] = distribution(merged_counts, total, overflow_all, min(block["min"][t] for t in live),
                                     weighted / total, max(block["max"][t] for t in live), limit, unit)
    metrics["cycles"] = {"unit": "count", "value": total}
    return {"schema": 1, "test": "latency", "tool": "cyclictest", "ok": bool(total), "interrupted": False,
            "params": {"histogram": limit, "threads": len(block["counts"])},
            "env": {"resolution_ns": unit, "threads": [{"index": t} for t in range(len(block["counts"]))]},
            "metrics": metrics, "verdicts": {},
            **({} if total else {"error": "the histogram holds no samples"})}


def histfile_text(columns: list[dict]) -> str:
    """cyclictest's -h/--histfile layout for one measurement: columns are per-thread
    distributions (ns) as rtgauge stores them. Values become whole µs the way cyclictest
    makes them (truncated); a log-linear bin wider than 1 µs is counted in the µs of its
    upper edge (capped at the max), so the layout never shows a latency lower than
    measured; the rows run to the max's µs, so nothing overflows unless the stored
    histogram itself had overflows."""
    per_thread = [_us_buckets(c) for c in columns]
    maxes = [int(c["max"]) // US if c.get("max") is not None else 0 for c in columns]
    bounds = [int(c["histogram"]["overflow_from_ns"]) // US for c in columns
              if isinstance(c.get("histogram"), dict) and c["histogram"].get("overflow_from_ns")]
    if bounds:      # a histogram with overflows (cyclictest's own -h LIMIT): keep its limit
        limit = min(HIST_MAX_US, max(1, min(bounds)))
    else:
        limit = min(HIST_MAX_US, max([m + 1 for m in maxes] + [max(b, default=-1) + 1 for b, _ in per_thread] + [1]))
    lines = ["# Histogram"]
    totals = [0] * len(columns)
    overflows = [o for _, o in per_thread]
    for t, (buckets, _) in enumerate(per_thread):
        for b in [b for b in buckets if b >= limit]:
            overflows[t] += buckets.pop(b)
    for i in range(limit):
        row = [per_thread[t][0].get(i, 0) for t in range(len(columns))]
        for t, c in enumerate(row):
            totals[t] += c
        lines.append(f"{i:06d} " + "\t".join(f"{c:06d}" for c in row))

    def us(v, f=int):
        return "0" if v is None else str(f(v) // US)
    lines.append("# Total:" + "".join(f" {t:09d}" for t in totals))
    lines.append("# Min Latencies:" + "".join(f" {int(us(c.get('min'))):05d}" for c in columns))
    lines.append("# Avg Latencies:" + "".join(f" {int(us(c.get('avg'), lambda v: int(v))):05d}" for c in columns))
    lines.append("# Max Latencies:" + "".join(f" {m:05d}" for m in maxes))
    lines.append("# Histogram Overflows:" + "".join(f" {o:05d}" for o in overflows))
    lines.append("# Histogram Overflow at cycle number:")
    for t, o in enumerate(overflows):
        lines.append(f"# Thread {t}:" + (f" # {o:05d} others" if o else ""))
    return "\n".join(lines) + "\n\n"


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
