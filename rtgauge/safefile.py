"""Every file rtgauge writes outside its private temporary directories (reports, exports,
the lab's logs and write probe, spool files) is written here: never through a symbolic
link, and never in place. The text goes to a new temporary file beside the target
(O_CREAT|O_EXCL|O_NOFOLLOW, so nothing planted is opened), is flushed, and is renamed
over the target only when whole: a planted symlink is replaced, its target untouched;
a failed write leaves the previous file as it was. A target that exists and is not a
regular file (a FIFO, /dev/null, /dev/full) is written in place, opened without
following a link and without creating anything."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO, Iterator

FILE_MODE = 0o644


class LinkRefused(OSError):
    """The target is a symbolic link (refused where a link must not even be replaced)."""


@contextlib.contextmanager
def open_for_write(path: str | os.PathLike, binary: bool = False, mode: int = FILE_MODE,
                   encoding: str = "utf-8") -> Iterator[IO]:
    """with open_for_write(path) as f: f.write(text) — the file appears whole at path
    when the block ends without an exception, else not at all (OSError for the caller's
    sentence)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, os.strerror(21), str(path))
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)   # a device or a FIFO
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": encoding})) as f:
            yield f
        return
    tmp = None
    for n in range(100):
        candidate = path.with_name(f".{path.name[:200]}.{os.getpid()}.{n}.tmp")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        except FileExistsError:
            continue
        tmp = candidate
        break
    if tmp is None:
        raise FileExistsError(17, os.strerror(17), str(path))
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": encoding})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str, mode: int = FILE_MODE) -> None:
    with open_for_write(path, mode=mode) as f:
        f.write(text)


def write_bytes(path: str | os.PathLike, data: bytes, mode: int = FILE_MODE) -> None:
    with open_for_write(path, binary=True, mode=mode) as f:
        f.write(data)


def create_new(path: str | os.PathLike, mode: int = 0o600) -> int:
    """A new, empty file at path for appending (a log followed as it grows): O_EXCL and
    O_NOFOLLOW, after removing a previous regular file or link of that name (the link
    itself, never what it points at). Returns the descriptor."""
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            os.unlink(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def write_text_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """write_text with an encoding (export's callers)."""
    with open_for_write(path, encoding=encoding) as f:
        f.write(text)
