"""The one place that bounds sizes the user supplies, checked before any work is done
on them: CPU lists (range-checked against the machine before they are expanded), run
ids and ranges (64-bit, a bounded count), names and notes (their length)."""

from __future__ import annotations

import os
import re

from rtgauge.errors import UserError

RUN_ID_MAX = 2**63 - 1      # the store's integer keys
RUN_RANGE_MAX = 10_000      # runs one command may name
NAME_MAX = 64               # a profile job name (shown in tables and progress lines)
PROFILE_NAME_MAX = 200
TEXT_MAX = 10_000           # a profile description, a note
PATH_MAX = 4096

_CPU_LIST = re.compile(r"\s*\d+(-\d+)?(\s*,\s*\d+(-\d+)?)*\s*")
# Linux's largest NR_CPUS is 8192: a CPU number at or above it exists on no machine, so a
# CPU list read from a board or a file is clipped there before it is expanded (a board
# saying isolcpus=0-4000000000 costs 8192 numbers, not 32 GB).
CPU_NUMBER_MAX = 8192
_CPU_PART = re.compile(r"(\d{1,12})(?:-(\d{1,12})(?::(\d{1,12})/(\d{1,12}))?)?")


def parse_cpu_list(text: str | None, all_cpus: list[int] | None = None) -> list[int]:
    """The one CPU-list grammar (the kernel's): '0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11];
    'all', a trailing 'N' for the last CPU (boot parameters; both need all_cpus) and the
    group form 'a-b:used/size'. Parts that do not parse are skipped (a fact read from a
    board is data, not a command); numbers are clipped below CPU_NUMBER_MAX before
    anything is expanded. A list the user types is checked by check_cpu_list first."""
    if not text:
        return []
    text = str(text)[:PATH_MAX * 4]
    cpus: set[int] = set()
    last = max(all_cpus) if all_cpus else None
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part == "all":
            cpus.update(c for c in (all_cpus or []) if 0 <= c < CPU_NUMBER_MAX)
            continue
        if last is not None:
            part = part.replace("N", str(last))
        m = _CPU_PART.fullmatch(part)
        if not m:
            continue
        lo = int(m.group(1))
        hi = min(int(m.group(2)) if m.group(2) else lo, CPU_NUMBER_MAX - 1)
        if lo > hi:
            continue
        if m.group(3):
            # group syntax 'a-b:used/size' picks `used` CPUs out of every `size`.
            used, size = int(m.group(3)), int(m.group(4))
            cpus.update(c for c in range(lo, hi + 1) if size and (c - lo) % size < used)
        else:
            cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpu_list(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's own notation, for advice lines)."""
    parts: list[str] = []
    cpus = sorted(set(cpus))
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def cpu_limit() -> int:
    """CPU numbers above this cannot exist here: the kernel's possible CPUs."""
    try:
        with open("/sys/devices/system/cpu/possible") as f:
            last = f.read(PATH_MAX).strip().split(",")[-1].split("-")[-1]
        return min(max(int(last), (os.cpu_count() or 1) - 1), CPU_NUMBER_MAX - 1)
    except (OSError, ValueError):
        return max((os.cpu_count() or 1) - 1, 0)


def check_cpu_list(option: str, text: str, allowed: list[int] | None = None) -> str:
    """text if it is a CPU list whose every number exists on this machine (is at most
    the largest of `allowed`, when given); else one sentence. Nothing is expanded before
    this passes, so 0-999999999 costs nothing."""
    if not isinstance(text, str) or len(text) > PATH_MAX or not _CPU_LIST.fullmatch(text):
        raise UserError(f"{option} {str(text)[:60]!r} is not a CPU list; write it like 1 or 2-3 or 0,2-3.")
    limit = max(allowed) if allowed else cpu_limit()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise UserError(f"{option} {text.strip()}: the range {part.strip()} runs backwards; write it "
                            "low-high, e.g. 2-3.")
        if last > limit and allowed:
            raise UserError(f"{option} {text.strip()[:60]}: CPU {last if last < 10**12 else 'number'} is not one "
                            f"rtgauge may use (allowed: {format_cpu_list(allowed)}); choose among those.")
        if last > limit:
            raise UserError(f"{option} {text.strip()[:60]}: CPU {last if last < 10**12 else 'number'} does not "
                            f"exist on this machine (CPUs 0-{limit}); choose among those.")
    return text


def check_run_id(text: str, value: int) -> int:
    if not 0 < value <= RUN_ID_MAX:
        raise UserError(f"'{text[:40]}' is not a run; give run ids such as 3, ranges such as 3-7, or "
                        "'latest'; `rtgauge show` lists the runs.")
    return value


def run_range(text: str, lo: int, hi: int) -> range:
    """The run ids lo..hi, bounded before the range is made."""
    check_run_id(text, lo)
    check_run_id(text, hi)
    if hi < lo:
        raise UserError(f"'{text}' runs backwards; write a range low-high, e.g. 3-7.")
    if hi - lo + 1 > RUN_RANGE_MAX:
        raise UserError(f"'{text[:60]}' names {hi - lo + 1:,} runs, more than one command takes "
                        f"({RUN_RANGE_MAX:,}); give a shorter range.")
    return range(lo, hi + 1)
