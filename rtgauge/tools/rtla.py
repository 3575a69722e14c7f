"""`rtla timerlat hist` text output (rtla has no machine-readable output; rteval and CI
harnesses parse this text). The layout, from rtla-timerlat-hist(1):

    # RTLA timerlat histogram
    # Time unit is microseconds (us)          (or nanoseconds (ns) with -n)
    # Duration:   0 00:10:00
    Index   IRQ-000   Thr-000   IRQ-001   Thr-001      (Usr-NNN with -u; columns may be left out)
    0        276489         0    206089         0      (a row per bucket: its lower edge, counts)
    ...
    over:         0         0         0         0      (samples beyond the last bucket)
    count:   600002    600002    600002    600002
    min:          0         1         0         1
    avg:          0         5         0         4
    max:         16        36        15        58

A row's index is its bucket's lower edge (bucket number × --bucket-size); rows of zeros
may be skipped. The bucket size is not printed: it is the greatest common divisor of
the indexes (1 when a row 1 is there). Each column is stored under its own name, never
as the engine's `ti` (a user-space thread's wake-up): the IRQ column as
`timerlat_irq#CPU` (the timer's expiry to its interrupt handler), the thread column as
`timerlat_thread#CPU` (the timer's expiry to timerlat's kernel thread running) and the
user-thread column (-u) as `timerlat_user#CPU`; `timerlat_irq` etc. merge the CPUs.
Read strictly: counts ≤ 2^53, at most 100,000 rows and 4096 CPUs, one sentence for
anything else."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

from rtgauge.defaults import interval_us
from rtgauge.errors import UserError
from rtgauge.records import engine_document
from rtgauge.store import validate
from rtgauge.tools import histogram
from rtgauge.tools.adapter import Adapter, Found, Imported, always, foreign_job, no_facts, program_on_target

COUNT_MAX = 2**53
ROWS_MAX = 100_000
CPUS_MAX = 4096
KINDS = {"IRQ": "timerlat_irq", "Thr": "timerlat_thread", "Usr": "timerlat_user"}
FOOTER = ("over", "count", "min", "avg", "max")


# The cross-check (a profile's cross_check = ["rtla"]): `rtla timerlat hist` on the job's
# CPUs, period, priority and duration, its text written to the result file. rtla prints
# its histogram when it ends by itself or on SIGINT, and dies silently on SIGTERM, which
# is how rtgauge (and the board's guard) stop a job: the wrapper turns a SIGTERM into
# a SIGINT, so a stopped job keeps what it measured. A `wait` the signal interrupted
# returns 143 and is asked again for the tool's own status, whether or not the tool is
# still running by then (the shell may have collected it already: asking `kill -0`
# first lost that status once, beside the suite's load); a `wait` for a tool it already
# reported answers the same status (dash) or 127 (a shell that forgot it: the status
# reported stands).
WRAPPER = ('out=$1; shift; "$@" >"$out" & p=$!; t=; trap \'t=1; kill -INT $p 2>/dev/null\' TERM INT; '
           'wait $p; s=$?; while [ -n "$t" ]; do t=; wait $p; r=$?; [ $r -eq 127 ] && break; s=$r; done; exit $s')
TRACERS = ("/sys/kernel/tracing/available_tracers", "/sys/kernel/debug/tracing/available_tracers")
# the shell line that prints a system's tracers (a board's, over its connection)
TRACERS_SH = "; ".join(f"cat {p} 2>/dev/null" for p in TRACERS) + "; true"


def command(options: dict, cpus: list[int], out_path: str, exe: str = "rtla") -> list[str]:
    """`rtla timerlat hist` with an engine latency job's settings, its output to out_path.
    A bucket of 1 µs and as many as the job's histogram (20,000: 20 ms), whole seconds
    (rtla's -d), at least one."""
    period = interval_us(options)
    seconds = max(1, math.ceil(float(options.get("duration-s", 10)) - 1e-9))
    policy = str(options.get("policy", "fifo"))
    entries = min(max(int(options.get("histogram", 20000)), 10), 9_999_999)
    prio = {"fifo": "f", "rr": "r"}.get(policy)
    return ["sh", "-c", WRAPPER, "sh", out_path, exe, "timerlat", "hist", "-p", str(period), "-d", f"{seconds}s",
            "-c", ",".join(map(str, cpus)), *(["-P", f"{prio}:{int(options.get('priority', 80))}"] if prio else []),
            "-b", "1", "-E", str(entries)]


def has_timerlat(tracers: str) -> bool:
    """Whether a system's available_tracers (their text) name timerlat."""
    return "timerlat" in tracers.split()


def local_unavailable() -> str | None:
    """Why `rtla timerlat` cannot run here (None: it can)."""
    if not shutil.which("rtla"):
        return "rtla is not installed (apt-get install rtla)"
    text = ""
    for p in TRACERS:
        try:
            text += Path(p).read_text()
        except OSError:
            continue
    if not has_timerlat(text):
        return ("this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER; Debian's kernels have it)"
                if text else "tracefs is not mounted or not readable, so the timerlat tracer cannot be found")
    return None


def target_unavailable(session) -> str | None:
    """Why `rtla timerlat` cannot run on a board (following the board's address; None: it can)."""
    if not session.has("rtla"):
        return "has no rtla"
    if not has_timerlat(session.sh(TRACERS_SH)):
        return "has no timerlat tracer (its kernel lacks CONFIG_TIMERLAT_TRACER, or tracefs is not mounted)"
    return None


def as_json(data: bytes) -> bytes:
    """rtla's text output as the JSON of an engine-contract document (a board's result
    comes back through the same strict JSON reader as the engine's)."""
    try:
        doc = document(parse(data.decode("utf-8", errors="replace")))
    except (ValueError, KeyError, IndexError, ZeroDivisionError) as e:
        raise UserError(f"rtla timerlat's output is not a histogram rtgauge reads ({e})") from None
    return json.dumps(doc).encode()


def _count(text: str, line: int, decimal: bool = False):
    try:
        if not text.isascii():          # int() takes other scripts' digits, and float() '１'
            raise ValueError
        value = float(text) if decimal else int(text)
    except ValueError:
        raise ValueError(f"line {line}: {text[:40]!r} is not a number") from None
    if not (0 <= value <= COUNT_MAX) or (decimal and not math.isfinite(value)):
        raise ValueError(f"line {line}: {text[:40]!r} is out of range (0 to 2^53)")
    return value


def parse(text: str) -> dict:
    """{unit_ns, duration, columns [(kind, cpu)], rows {index: [counts]}, footer {key: [values]}}."""
    unit_ns, duration, columns = 1000, None, None
    rows: dict[int, list[int]] = {}
    footer: dict[str, list] = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if line.startswith("#"):
            if "Time unit is nanoseconds" in line:
                unit_ns = 1
            elif line.startswith("# Duration:"):
                duration = line.split(":", 1)[1].strip()[:40]
            continue
        if words[0] == "Index":
            columns = []
            for w in words[1:]:
                m = re.fullmatch(r"(IRQ|Thr|Usr)-(\d{1,6})", w, re.ASCII)
                if not m or int(m.group(2)) >= CPUS_MAX:
                    raise ValueError(f"line {number}: {w[:40]!r} is not a column rtla prints (IRQ-N, Thr-N, Usr-N)")
                columns.append((m.group(1), int(m.group(2))))
            if not columns or len(set(columns)) != len(columns):
                raise ValueError(f"line {number}: the columns are empty or repeated")
            continue
        if words[0].upper().startswith("ALL"):
            break                                  # newer rtla's all-CPUs summary: recomputed here
        if columns is None:
            raise ValueError(f"line {number} comes before the 'Index' header line")
        key = words[0].rstrip(":")
        values = words[1:]
        if len(values) != len(columns):
            raise ValueError(f"line {number} has {len(values)} values for {len(columns)} columns")
        if key in FOOTER:
            footer[key] = [_count(v, number, decimal=(key == "avg")) for v in values]
        elif key.isdigit():
            index = _count(key, number)
            if index in rows or len(rows) >= ROWS_MAX:
                raise ValueError(f"line {number}: bucket {index} repeated, or more than {ROWS_MAX:,} rows")
            rows[index] = [_count(v, number) for v in values]
        else:
            raise ValueError(f"line {number} is neither a bucket row nor one of {', '.join(FOOTER)}")
    if columns is None:
        raise ValueError("there is no 'Index' header line")
    missing = [k for k in ("count", "max") if k not in footer]
    if missing:
        raise ValueError(f"the '{missing[0]}:' line is missing")
    return {"unit_ns": unit_ns, "duration": duration, "columns": columns, "rows": rows, "footer": footer}


def bucket_size(indexes) -> int:
    size = 0
    for i in indexes:
        size = math.gcd(size, i)
    return size or 1


def distribution(counts: dict[int, int], size: int, unit_ns: int, count: int, over: int, vmin, vavg, vmax) -> dict:
    """A contract distribution (ns): buckets [lo, lo + size) in rtla's unit, plus overflows
    (from the bucket above the highest one); a percentile is its bucket's top, never above
    the measured max."""
    return histogram.distribution(counts, count, over, vmin if count else None,
                                  vavg if count and vavg is not None else None, vmax if count else None,
                                  width=size, unit_ns=unit_ns, edge="high", spread="inside")


def document(parsed: dict) -> dict:
    """The parsed output as an engine-contract latency document."""
    size = bucket_size(parsed["rows"])
    unit = parsed["unit_ns"]
    footer = parsed["footer"]
    metrics: dict = {}
    merged: dict[str, dict] = {}
    for col, (kind, cpu) in enumerate(parsed["columns"]):
        counts = {lo: row[col] for lo, row in parsed["rows"].items() if row[col]}
        count = int(footer["count"][col])
        over = int(footer["over"][col]) if "over" in footer else max(0, count - sum(counts.values()))
        if sum(counts.values()) + over != count:
            raise ValueError(f"{kind}-{cpu:03d} counts {sum(counts.values()):,} in its buckets and {over:,} over, "
                             f"but its count is {count:,}")
        vmin = footer["min"][col] if "min" in footer else min(counts, default=0)
        vmax = footer["max"][col]
        if counts and vmax < max(counts):
            raise ValueError(f"{kind}-{cpu:03d}'s max {vmax} is below its highest bucket ({max(counts)})")
        name = KINDS[kind]
        metrics[f"{name}#{cpu}"] = distribution(counts, size, unit, count, over, vmin,
                                                footer["avg"][col] if "avg" in footer else None, vmax)
        m = merged.setdefault(name, {"counts": {}, "count": 0, "over": 0, "min": None, "max": None, "sum": 0.0})
        for lo, c in counts.items():
            m["counts"][lo] = m["counts"].get(lo, 0) + c
        m["count"] += count
        m["over"] += over
        if count:
            m["min"] = vmin if m["min"] is None else min(m["min"], vmin)
            m["max"] = vmax if m["max"] is None else max(m["max"], vmax)
            m["sum"] += (footer["avg"][col] if "avg" in footer else 0) * count
    for name, m in merged.items():
        metrics[name] = distribution(m["counts"], size, unit, m["count"], m["over"], m["min"] or 0,
                                     m["sum"] / m["count"] if m["count"] else None, m["max"] or 0)
    total = merged.get("timerlat_thread", next(iter(merged.values()), {"count": 0}))["count"]
    metrics["cycles"] = {"unit": "count", "value": total}
    cpus = sorted({cpu for _, cpu in parsed["columns"]})
    return engine_document("latency", tool="rtla-timerlat", ok=bool(total),
                           error=None if total else "the histogram holds no samples",
                           params={"cpus": cpus, "bucket_size": size, "unit_ns": unit},
                           env={"resolution_ns": size * unit, "duration": parsed["duration"],
                                "threads": [{"index": i, "cpu": c} for i, c in enumerate(cpus)]},
                           metrics=metrics)


# -- the adapter: `rtla timerlat hist`, run as a cross-check and imported -------------------

HEADER = b"# RTLA timerlat histogram"


def sniff(found: Found) -> bool:
    return found.is_text and found.head.lstrip().startswith(HEADER)


def read(found: Found, condition: str) -> Imported:
    where = str(found.path)
    try:
        doc = document(parse(validate.read_text_file(found.path)))
    except ValueError as e:
        raise UserError(f"{where} is not `rtla timerlat hist` output rtgauge reads: {e}; give rtla's output "
                        "unchanged.") from None
    validate.check_engine_document(doc, where)
    return Imported("rtla timerlat hist", no_facts("none: rtla timerlat hist output records no system facts"),
                    [(foreign_job("timerlat", condition, "rtla-timerlat", []), doc)],
                    f"duration {doc['env']['duration'] or '?'}; the output has no system facts or start time")


def job_command(job, out_path: str, extra: list[str] = ()) -> list[str]:
    return command(job.options, job.cpus, out_path)


def job_document(raw, job, where: str, status: int, interrupted: bool):
    """A cross-check's histogram (as_json's document, parsed) with what the output does
    not print: the job's period, policy and priority, and whether it was stopped."""
    if isinstance(raw, dict):
        raw["interrupted"] = bool(interrupted)
        raw.setdefault("params", {}).update({"interval_us": interval_us(job.options),
                                             "policy": str(job.options.get("policy", "fifo")),
                                             "priority": int(job.options.get("priority", 80))})
    return raw


def board_command(job, out_path: str) -> list[str]:
    return command(job.options, job.cpus, out_path)


# no realtime_priority: the rtla cross-check (root, for its tracer) is not held to the run's
# real-time check, nor dropped under --allow-fallback (plan/privilege.py)
ADAPTER = Adapter("rtla", sniff, read, command=job_command, to_document=job_document, readable=as_json,
                  local_unavailable=local_unavailable, target_unavailable=target_unavailable, label="rtla timerlat",
                  takes_cpus=always,
                  run_on_target=program_on_target(board_command, as_json, ["rtla", "timerlat", "hist"]))
