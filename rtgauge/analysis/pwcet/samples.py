"""The probable worst case of a raw samples file (docs/samples.md): reading it within
its bounds, cutting it into blocks of cycles, and analysing all threads and each."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import numpy as np

from rtgauge.defaults import DEFAULT_EXCEEDANCE
from rtgauge.errors import UserError
from rtgauge.analysis.pwcet.fit import GOF_DRAWS
from rtgauge.analysis.pwcet.text import Pwcet
from rtgauge.analysis.pwcet.estimate import analyse, seen_max


BINARY_MAGIC = b"RTGSAMP1"
# the largest samples file read (docs/samples.md): 1 GiB binary is 22 million records;
# CSV is parsed at ~10x its size, so its bound is lower. Host memory stays bounded.
SAMPLES_BINARY_MAX = 1024**3
SAMPLES_CSV_MAX = 256 * 1024**2
BLOCKS_MAX = 10**7
BINARY_DTYPE = np.dtype([("thread", "<u4"), ("reserved", "<u4"), ("cycle", "<u8"), ("deadline_ns", "<i8"),
                         ("ti", "<i8"), ("ts", "<i8"), ("tw", "<i8")])


def read_samples(path: str) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{thread: (cycle, deadline_ns, ti_ns)} from a docs/samples.md file (CSV or binary)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)    # a FIFO must not block the open
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            raise UserError(f"{path} is not a regular file; give a samples file (docs/samples.md), not a "
                            "device or a pipe.")
        with os.fdopen(fd, "rb") as f:
            head = f.read(16)
            limit = SAMPLES_BINARY_MAX if head[:8] == BINARY_MAGIC else SAMPLES_CSV_MAX
            if info.st_size > limit:
                raise UserError(f"{path} is {info.st_size / 1024**2:,.0f} MiB, more than rtgauge reads as samples "
                                f"({limit // 1024**2:,} MiB); give a shorter run's samples.")
            if head[:8] == BINARY_MAGIC:
                size = struct.unpack_from("<I", head, 8)[0] if len(head) >= 12 else 0
                if size != BINARY_DTYPE.itemsize:
                    raise UserError(f"{path} has {size}-byte records; this rtgauge reads the 48-byte "
                                    "records of docs/samples.md.")
                partial = (info.st_size - 16) % size if info.st_size >= 16 else 0
                if partial:
                    raise UserError(f"{path} ends inside a record ({partial} of {size} bytes): it was cut "
                                    "short; give the whole file.")
                data = np.fromfile(f, dtype=BINARY_DTYPE, count=(info.st_size - 16) // size)
                cols = (data["thread"], data["cycle"], data["deadline_ns"], data["ti"])
            else:
                f.seek(0)
                header = f.readline().decode("utf-8", "replace").strip()
                if header != "thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns":
                    raise UserError(f"{path} is not an rtgauge samples file (docs/samples.md): it starts with "
                                    f"{header[:40]!r} instead of the CSV header or RTGSAMP1.")
                try:
                    arr = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
                except ValueError as e:
                    raise UserError(f"{path} has a malformed line ({str(e).splitlines()[0]}); "
                                    "each line must hold six integers.") from None
                if arr.size == 0:
                    arr = np.empty((0, 6), dtype=np.int64)
                if arr.shape[1] != 6:
                    raise UserError(f"{path} has {arr.shape[1]} columns a line; docs/samples.md has six.")
                cols = (arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])
    except FileNotFoundError:
        raise UserError(f"no samples file {path}; write one with `rtgauge-engine latency --samples FILE`.") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory; give a samples file.") from None
    except PermissionError:
        raise UserError(f"cannot read {path}: permission denied.") from None
    thread, cycle, deadline, ti = cols
    if len(thread) == 0:
        raise UserError(f"{path} holds no samples; run `rtgauge-engine latency --samples FILE` for longer.")
    out = {}
    for t in np.unique(thread):
        sel = thread == t
        order = np.argsort(cycle[sel], kind="stable")
        out[int(t)] = (cycle[sel][order].astype(np.int64), deadline[sel][order].astype(np.int64),
                       ti[sel][order].astype(np.int64))
    return out


def default_block(cycles: int) -> int:
    """Cycles a block when not given: 1000 (one second at 1 kHz), fewer for short runs so
    that there are about 100 blocks, never under 10."""
    return int(max(10, min(1000, cycles // 100)))


def samples_pwcet(path: str, exceedance: float = DEFAULT_EXCEEDANCE, block_cycles: int | None = None,
                  gof_draws: int = GOF_DRAWS) -> list[Pwcet]:
    """pWCET of a raw samples file: all threads together (the largest Ti of each cycle),
    then each thread. Blocks are runs of consecutive cycle numbers."""
    per_thread = read_samples(path)
    interval = None
    diffs = [np.diff(d) for _, d, _ in per_thread.values() if len(d) > 1]
    steps = [np.diff(c) for c, _, _ in per_thread.values() if len(c) > 1]
    if diffs:
        d, s = np.concatenate(diffs), np.concatenate(steps)
        ok = s > 0
        if ok.any():
            interval = int(round(float(np.median(d[ok] / s[ok]))))
    longest = max(int(c[-1]) + 1 for c, _, _ in per_thread.values())
    if min(int(c[0]) for c, _, _ in per_thread.values()) < 0:
        raise UserError(f"{path} has a negative cycle number; it is not an rtgauge samples file.")
    block = block_cycles or default_block(longest)
    if block < 1:
        raise UserError(f"a block must hold at least one cycle (got {block}).")
    if longest // block > BLOCKS_MAX:
        raise UserError(f"{path} numbers its cycles up to {longest - 1:,}, which makes more than {BLOCKS_MAX:,} "
                        "blocks; give a larger --block-cycles or the engine's own samples file.")

    def maxima(cycle, ti):
        # the maximum per block of cycle numbers; blocks with no sample (all skipped) are left out
        idx = cycle // block
        full = int(longest // block)
        keep = idx < full
        out = np.full(full, -np.inf)
        np.maximum.at(out, idx[keep], ti[keep].astype(float))
        return [v for v in out if np.isfinite(v)]

    cyc_all = np.concatenate([c for c, _, _ in per_thread.values()])
    ti_all = np.concatenate([t for _, _, t in per_thread.values()])
    def top(ti):
        return float(ti.max()) if len(ti) else None

    results = [seen_max(analyse(maxima(cyc_all, ti_all), block, exceedance, interval, "all threads", "samples",
                                gof_draws), top(ti_all))]
    if len(per_thread) > 1:
        for t, (c, _, ti) in per_thread.items():
            results.append(seen_max(analyse(maxima(c, ti), block, exceedance, interval, f"thread {t}", "samples",
                                            gof_draws), top(ti)))
    return results
