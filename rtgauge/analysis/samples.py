"""The engine's raw samples file (docs/samples.md), read in one place: bounded, so that
host memory stays bounded whoever wrote the file, and with one sentence for each way a
file can be wrong. Its readers: the probable worst case of a samples file
(analysis/pwcet/samples.py) and the whole-run attribution (analysis/run/spikes.py)."""

from __future__ import annotations

import os
import stat
import struct
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rtgauge.errors import UserError


class Samples(NamedTuple):
    """A samples file's columns, one element a sample (int64)."""
    thread: np.ndarray
    cycle: np.ndarray
    deadline_ns: np.ndarray
    ti_ns: np.ndarray


BINARY_MAGIC = b"RTGSAMP1"
# the largest samples file read (docs/samples.md): 1 GiB binary is 22 million records;
# CSV is parsed at ~10x its size, so its bound is lower. Host memory stays bounded.
SAMPLES_BINARY_MAX = 1024**3
SAMPLES_CSV_MAX = 256 * 1024**2
BINARY_DTYPE = np.dtype([("thread", "<u4"), ("reserved", "<u4"), ("cycle", "<u8"), ("deadline_ns", "<i8"),
                         ("ti", "<i8"), ("ts", "<i8"), ("tw", "<i8")])


def read_samples(path: str, bounded: bool = True) -> Samples:
    """The columns of a docs/samples.md file (CSV or binary), in the file's order, as int64
    arrays; a file with a header and no samples gives empty ones (its reader says what
    that means). A file that is not a regular file, too large for its format (bounded:
    one a user gives; the attribution reads the file the engine wrote for the run it
    attributes, as long as that run), cut inside a record, of another record size or
    another header, or malformed is a UserError."""
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
            if bounded and info.st_size > limit:
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
                    with warnings.catch_warnings():     # a header alone: no samples, which the reader says
                        warnings.filterwarnings("ignore", "loadtxt: input contained no data")
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
    return Samples(*(np.asarray(c).astype(np.int64) for c in (thread, cycle, deadline, ti)))


def by_thread(samples: Samples) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{thread: (cycle, deadline_ns, ti_ns)}, each thread's samples in cycle order."""
    out = {}
    for t in np.unique(samples.thread):
        sel = samples.thread == t
        order = np.argsort(samples.cycle[sel], kind="stable")
        out[int(t)] = (samples.cycle[sel][order], samples.deadline_ns[sel][order], samples.ti_ns[sel][order])
    return out
