"""System facts and doctor checks of several runs side by side, with the rows
that differ between systems marked."""

from __future__ import annotations

from rtgauge.analysis.run.headline import tuning_of
from rtgauge.records import Run


def _governors(f: dict) -> str | None:
    g = f.get("governors") or {}
    vals = sorted(set(g.values())) if isinstance(g, dict) else []
    return ", ".join(vals) if vals else None


def _clocksource(f: dict):
    c = f.get("clocksource")
    return c.get("current") if isinstance(c, dict) else c


def emulation_note(f: dict) -> str | None:
    """What a report says of a system under full-system emulation (QEMU's TCG: every
    instruction translated in software) or of a virtual machine: its timings are not
    those of a hardware. None for bare metal."""
    v = f.get("virtualization")
    if not isinstance(v, dict) or not v.get("vm"):
        return None
    if v.get("emulated"):
        return f"emulated ({v.get('kind') or 'full-system emulation'}): timings not meaningful for hardware"
    return f"virtual machine ({v.get('kind') or v.get('hypervisor') or 'unknown'}): timings are the VM's, not the hardware's"


def _virt(f: dict):
    v = f.get("virtualization")
    if isinstance(v, dict) and v.get("emulated"):
        return f"full-system emulation ({v.get('kind')}): timings not meaningful for hardware"
    if isinstance(v, dict):
        return (v.get("hypervisor") or "yes") if v.get("vm") else "bare metal"
    return v


def _list(value):
    if isinstance(value, (list, tuple)):
        return ", ".join(str(x) for x in value) if value else "none"
    return value


FACTS = (
    ("host", lambda r, f: f.get("hostname") or r.extra.get("hostname")),
    ("kernel", lambda r, f: f.get("kernel_release") or r.extra.get("kernel_release")),
    ("kernel build", lambda r, f: f.get("kernel_version")),
    ("preemption model", lambda r, f: f.get("preempt_model")),
    ("PREEMPT_RT kernel", lambda r, f: f.get("realtime")),
    ("architecture", lambda r, f: f.get("arch")),
    ("CPU", lambda r, f: f.get("cpu_model")),
    ("logical CPUs", lambda r, f: f.get("cpus")),
    ("physical cores", lambda r, f: f.get("physical_cores")),
    ("SMT", lambda r, f: f.get("smt")),
    ("virtualisation", lambda r, f: _virt(f)),
    ("kernel HZ", lambda r, f: f.get("kernel_hz")),
    ("clocksource", lambda r, f: _clocksource(f)),
    ("governor", lambda r, f: _governors(f)),
    ("isolated CPUs", lambda r, f: _list(f.get("isolcpus"))),
    ("nohz_full", lambda r, f: _list(f.get("nohz_full"))),
    ("RT throttling", lambda r, f: None if f.get("rt_runtime_us") is None
     else f"{f.get('rt_runtime_us')}/{f.get('rt_period_us')} µs"),
    ("real-time tuning", lambda r, f: ", ".join(tuning_of(f)) or "none (out of the box)"),
    ("kernel debug options", lambda r, f: _list(f.get("kernel_debug_options"))),
    ("kernel command line", lambda r, f: f.get("cmdline")),
    ("profile", lambda r, f: r.profile),
    ("run status", lambda r, f: r.status),
    ("started (UTC)", lambda r, f: r.started_at),
    ("rtgauge", lambda r, f: r.extra.get("rtgauge_version")),
)


def fact_rows(runs: list[Run]) -> list[dict]:
    """[{"fact", "values": [...per run], "differs": bool}] (differs only with ≥ 2 runs;
    the run's own status and start time are not differences between systems)."""
    out = []
    for label, get in FACTS:
        values = [get(r, r.system) for r in runs]
        if all(v is None for v in values):
            continue
        text = ["–" if v is None else str(v) for v in values]
        differs = len(runs) > 1 and len(set(text)) > 1 and label not in ("started (UTC)", "run status")
        out.append({"fact": label, "values": text, "differs": differs})
    return out


def doctor_rows(runs: list[Run]) -> list[dict]:
    """[{"check", "cells": [{"status","value","advice"} | None per run], "differs"}]"""
    names: list[str] = []
    for r in runs:
        for c in r.doctor:
            if c.get("name") not in names:
                names.append(c.get("name"))
    out = []
    for name in names:
        cells = [next((c for c in r.doctor if c.get("name") == name), None) for r in runs]
        statuses = {(c or {}).get("status") for c in cells}
        out.append({"check": name, "cells": cells, "differs": len(runs) > 1 and len(statuses) > 1})
    return out
