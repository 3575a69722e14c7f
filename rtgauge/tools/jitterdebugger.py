"""jitterdebugger's results as a run.

jitterdebugger (Debian package `jitterdebugger`) runs a SCHED_FIFO thread per CPU that
sleeps an interval (relative clock_nanosleep, default 250 µs) and records how late it
woke. `jitterdebugger -o DIR` leaves in DIR:

    results.json   {"version": 3,
                    "sysinfo": {"sysname", "nodename", "release", "version", "machine",
                                "cpus_online", "resolution_in_ns": 1000 (µs) or 1 (-N, ns)},
                    "cpu": {"0": {"histogram": {"VALUE": COUNT, ...}, "count": N,
                                  "min": V, "max": V, "avg": V}, ...}}
    uname, cmdline, cpuinfo, cpus_online, interrupts, dmesg, config.gz
                   (copies of the system's files)

Version 1 (older releases; `-f FILE`) has no "sysinfo" and counts in µs. Values are in
the resolution's unit; the histogram stops at 1,000 µs, so a sample at or beyond it is
only in "count" and "max": count − Σ histogram are overflows (the percentiles that fall
among them are reported as the max, an upper bound, as for cyclictest). The "cpu" keys
number the measuring threads, not the CPUs. The files do not record the interval, the
priority or the start time.

Read strictly and with bounds, like cyclictest's files: a file from another machine is
data, not trusted."""

from __future__ import annotations

import os
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.store import validate
from rtgauge.sysinfo.facts import cpu_model, read_preemption
from rtgauge.sysinfo.readers import kernel_config_of_gz, parse_cmdline, parse_key_value_lines, read_bounded
from rtgauge.tools import cyclictest
from rtgauge.tools.adapter import Adapter, Found, Imported, foreign_job

COUNT_MAX = cyclictest.COUNT_MAX
THREADS_MAX = cyclictest.THREADS_MAX
BINS_MAX = 1_000_000                 # 1,000 µs in ns: the most a -N histogram holds
HISTOGRAM_LIMIT_NS = 1_000_000       # jitterdebugger's histogram: values below 1,000 µs
VERSIONS = (1, 2, 3)
SYSTEM_FILES = ("uname", "cmdline", "cpuinfo", "config.gz")

_COUNT = {"type": "integer", "minimum": 0, "maximum": COUNT_MAX}
_NUMBER = {"type": "number", "minimum": 0, "maximum": COUNT_MAX}
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "jitterdebugger results.json (versions 1 to 3)",
    "type": "object",
    "required": ["cpu"],
    "properties": {
        "version": {"type": "integer", "enum": list(VERSIONS)},
        "sysinfo": {"type": "object", "properties": {
            **{k: {"type": "string", "maxLength": 200}
               for k in ("sysname", "nodename", "release", "version", "machine")},
            "cpus_online": {"type": "integer", "minimum": 0, "maximum": 1 << 20},
            "resolution_in_ns": {"type": "integer", "enum": [1, 1000]}}},
        "cpu": {"type": "object", "minProperties": 1, "maxProperties": THREADS_MAX,
                "propertyNames": {"pattern": "^[0-9]{1,4}$"},
                "additionalProperties": {
                    "type": "object", "required": ["histogram", "count", "min", "max"],
                    "properties": {
                        "histogram": {"type": "object", "maxProperties": BINS_MAX,
                                      "propertyNames": {"pattern": "^[0-9]{1,10}$"},
                                      "additionalProperties": _COUNT},
                        "count": _COUNT, "min": _NUMBER, "max": _NUMBER, "avg": _NUMBER}}},
    },
}


def is_results(data) -> bool:
    """The shape of jitterdebugger's results.json (before the strict check)."""
    if not isinstance(data, dict) or not isinstance(data.get("cpu"), dict) or not data["cpu"]:
        return False
    if "thread" in data or "rtgauge_export" in data or "metrics" in data or ("test" in data and "schema" in data):
        return False                # cyclictest's --json, an export, an engine document
    first = next(iter(data["cpu"].values()))
    return isinstance(first, dict) and "histogram" in first


def unit_ns(raw: dict) -> int:
    info = raw.get("sysinfo") if isinstance(raw.get("sysinfo"), dict) else {}
    return int(info.get("resolution_in_ns") or 1000)


def document(raw: dict) -> dict:
    """results.json (strictly parsed and checked against RESULTS_SCHEMA) as an engine-contract
    document: ti#N per measuring thread, ti merged. ValueError for a file whose figures
    contradict each other."""
    unit = unit_ns(raw)
    limit = HISTOGRAM_LIMIT_NS // unit
    keys = sorted(raw["cpu"], key=int)
    counts, overflow, vmin, vavg, vmax = [], [], [], [], []
    for key in keys:
        t = raw["cpu"][key]
        hist = {int(b): int(c) for b, c in t["histogram"].items() if c}
        inside = sum(hist.values())
        if inside > t["count"]:
            raise ValueError(f"CPU entry {key} has {inside:,} values in its histogram but a count of {t['count']:,}")
        if hist and (max(hist) > t["max"] or min(hist) < t["min"]):
            raise ValueError(f"CPU entry {key}'s histogram runs from {min(hist)} to {max(hist)}, outside its min "
                             f"{t['min']} and max {t['max']}")
        if t["count"] and "avg" in t and not t["min"] <= t["avg"] <= t["max"]:
            raise ValueError(f"CPU entry {key}'s avg {t['avg']} is outside its min {t['min']} and max {t['max']}")
        counts.append(hist)
        overflow.append(t["count"] - inside)
        vmin.append(t["min"] if t["count"] else None)
        vavg.append(t.get("avg", 0.0) if t["count"] else None)
        vmax.append(t["max"] if t["count"] else 0)
    top = max((max(h) for h in counts if h), default=-1)
    block = {"counts": counts, "overflow": overflow, "min": vmin, "avg": vavg, "max": vmax,
             "limit_us": max(limit, top + 1), "unit_ns": unit}
    doc = cyclictest.document_of_histfile(block)
    doc["tool"] = "jitterdebugger"
    doc["params"] = {"threads": len(keys), "resolution_ns": unit}
    if not doc["ok"]:
        doc["error"] = "the results hold no samples"
    return doc


def read_system_file(directory: Path, name: str) -> bytes | None:
    """One of the system files jitterdebugger copies beside results.json: a regular file,
    not a symbolic link, bounded (sysinfo's reader)."""
    path = directory / name
    if os.path.islink(path):
        return None
    return read_bounded(str(path))


def facts(raw: dict, directory: Path | None) -> dict:
    """System facts from results.json's sysinfo and, when the directory jitterdebugger
    wrote is at hand, its copies of cpuinfo, cmdline and the kernel config."""
    info = raw.get("sysinfo") if isinstance(raw.get("sysinfo"), dict) else {}
    out = {"hostname": info.get("nodename"), "machine_id": None, "kernel_release": info.get("release"),
           "kernel_version": info.get("version"), "arch": info.get("machine"), "cpu_model": None,
           "cpus": info.get("cpus_online"), "preempt_model": None, "realtime": None,
           "facts_source": "jitterdebugger results.json sysinfo (imported; rtgauge doctor did not run there)"}
    if directory is None:
        if out["kernel_version"]:
            out.update(read_preemption("/nonexistent", out["kernel_version"], {}, {}))
            out["realtime"] = out["preempt_model"] == "PREEMPT_RT" or None
        return out
    files = {name: read_system_file(directory, name) for name in SYSTEM_FILES}

    def text(name):
        data = files[name]
        return data.decode("utf-8", errors="replace") if data is not None else None
    cpuinfo = parse_key_value_lines((text("cpuinfo") or "").split("\n\n")[0])
    out["cpu_model"] = cpu_model(cpuinfo)
    cmdline = (text("cmdline") or "").strip()
    config = kernel_config_of_gz(files["config.gz"]) or {}
    # the directory's root has no /sys: the model comes from uname -v and the config
    preemption = read_preemption(str(directory / "nonexistent"), out["kernel_version"], config,
                                 parse_cmdline(cmdline))
    out.update(preemption)
    out["realtime"] = out["preempt_model"] == "PREEMPT_RT"
    if cmdline:
        out["cmdline"] = cmdline[:4096]
    found = [n for n in SYSTEM_FILES if files[n] is not None]
    out["facts_source"] = (f"jitterdebugger results.json sysinfo and its copies of {', '.join(found)} (imported; "
                           "rtgauge doctor did not run there)") if found else out["facts_source"]
    return out


# -- the adapter: results.json or its -o directory, imported ---------------------------------

RESULTS = "results.json"


def sniff(found: Found) -> bool:
    if found.is_dir:
        return is_results(found.json_in(RESULTS))      # the directory `jitterdebugger -o DIR` wrote
    return found.is_json and is_results(found.data)


def read(found: Found, condition: str) -> Imported:
    """results.json; from the directory `jitterdebugger -o DIR` wrote, its copies of the
    system's files give the facts."""
    directory = found.path if found.is_dir else None
    source = found.path / RESULTS if found.is_dir else found.path
    data = found.json_in(RESULTS) if found.is_dir else found.data
    where = str(source)
    if isinstance(data.get("version"), int) and data["version"] not in VERSIONS:
        raise UserError(f"{where} is jitterdebugger results version {data['version']}, which this rtgauge does not "
                        f"read (it reads {', '.join(map(str, VERSIONS))}); upgrade rtgauge.")
    validate.check_schema(data, RESULTS_SCHEMA, where, "jitterdebugger results.json",
                          "give the results.json jitterdebugger wrote, unchanged.")
    try:
        doc = document(data)
    except ValueError as e:
        raise UserError(f"{where} is not a valid jitterdebugger results.json: {e}; give the file jitterdebugger "
                        "wrote, unchanged.") from None
    validate.check_engine_document(doc, where)
    unit = "ns" if unit_ns(data) == 1 else "µs"
    threads = len(data["cpu"])
    return Imported("jitterdebugger results", facts(data, directory),
                    [(foreign_job("jitterdebugger", condition, "jitterdebugger", []), doc)],
                    f"{threads} measuring thread{'s' if threads != 1 else ''}, counted in {unit}"
                    + (f", system files from {directory}" if directory is not None else "")
                    + "; the file has no interval, priority or start time", source=source)


ADAPTER = Adapter("jitterdebugger", sniff, read)
