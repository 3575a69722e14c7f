"""The one writer of every file rtgauge writes outside its private temporary directories:
HTML reports (`report -o`, `run --report`, `compare -o`, the lab's page), exports
(`export -o`), JUnit (`--junit`), `run --metrics-file`, `run --run-id-file`, spool files,
the lab's logs and write probe. One rule (docs/store.md, "Files rtgauge writes"):

- `-`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` and `/proc/self/fd/N` name a stream
  that is already open: the text is written to that descriptor, nothing is created,
  replaced or removed (/dev/stdout stays the link it is).
- Any other name must be absent or a regular file. The text goes to a new temporary
  file beside it (O_CREAT|O_EXCL|O_NOFOLLOW, so nothing planted is opened), is flushed
  and renamed over the name only when whole: a failed write leaves the previous file
  as it was, and a reader never sees half of one.
- A symbolic link, a directory, a device, a FIFO or a socket at the name is refused
  (Refused, an OSError whose strerror is the reason): nothing is opened through it,
  nothing replaces it. A device is never opened (opening one can act: a watchdog, a
  tape), so `-o /dev/null` is refused too; `> /dev/null` or `-o -` is the way.

The C engine has the same rule in engine/src/output.c (docs/engine.md)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from pathlib import Path
from typing import IO, Iterator

from rtgauge.errors import UserError
from rtgauge.printable import printable

FILE_MODE = 0o644

_FD_NAME = re.compile(r"/(?:proc/self|dev)/fd/([0-9]{1,7})")


class Refused(OSError):
    """The name holds something rtgauge does not write to (a link, a directory, a
    device, a FIFO, a socket); strerror says which, as a clause for a sentence."""

    def __init__(self, reason: str, path: str):
        super().__init__(errno.EPERM, reason, path)


# kept for callers of the previous interface: a link is one of the refused kinds
LinkRefused = Refused


def stream_fd(path: str | os.PathLike) -> int | None:
    """The descriptor a name means when it names an open stream, else None."""
    text = os.fspath(path)
    if text in ("-", "/dev/stdout"):
        return 1
    if text == "/dev/stderr":
        return 2
    m = _FD_NAME.fullmatch(text)
    return int(m.group(1)) if m else None


def _kind(mode: int) -> str | None:
    """Why a file of this mode is refused (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "it is a symbolic link, which rtgauge does not write through"
    if stat.S_ISDIR(mode):
        return "it is a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device, not a regular file"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO, not a regular file"
    return "it is not a regular file"


def check(path: str | os.PathLike) -> None:
    """Refuse, before any work, a name the writer would refuse at the end: Refused for a
    link, directory, device, FIFO or socket; FileNotFoundError / PermissionError when
    its directory is missing or not writable; EBADF for a stream that is not open."""
    fd = stream_fd(path)
    if fd is not None:
        os.fstat(fd)                       # OSError EBADF: not open
        return
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        reason = _kind(st.st_mode)
        if reason:
            raise Refused(reason, str(path))
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "its directory does not exist", str(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "its directory is not writable", str(path))


def reason(e: OSError) -> str:
    """The clause of a sentence for an OSError of this module."""
    return e.strerror or str(e)


@contextlib.contextmanager
def _stream(fd: int, binary: bool, encoding: str) -> Iterator[IO]:
    for s in (sys.stdout, sys.stderr):     # what was printed before comes first
        with contextlib.suppress(Exception):
            s.flush()
    own = {1: sys.stdout, 2: sys.stderr}.get(fd)
    if own is not None and binary:
        own = getattr(own, "buffer", None)
    if own is not None:
        # the process's own stream object, not a second writer on its descriptor: what
        # sys.stdout is (a pipe closed early, a caller's replacement) is what is written
        yield own
        own.flush()
        return
    os.fstat(fd)                                                        # EBADF when not open
    with os.fdopen(fd, "wb" if binary else "w", closefd=False,
                   **({} if binary else {"encoding": encoding})) as f:
        yield f


@contextlib.contextmanager
def open_for_write(path: str | os.PathLike, binary: bool = False, mode: int = FILE_MODE,
                   encoding: str = "utf-8") -> Iterator[IO]:
    """with open_for_write(path) as f: f.write(text) — the file appears whole at path
    when the block ends without an exception, else not at all (an OSError, Refused
    included, for the caller's sentence)."""
    fd = stream_fd(path)
    if fd is not None:
        with _stream(fd, binary, encoding) as f:
            yield f
        return
    path = Path(path)
    check(path)
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        mode &= stat.S_IMODE(st.st_mode)      # a file replaced is not made more readable than it was
    tmp = None
    for n in range(100):
        candidate = path.with_name(f".{path.name[:200]}.{os.getpid()}.{n}.tmp")
        try:
            tfd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        except FileExistsError:
            continue
        tmp = candidate
        break
    if tmp is None:
        raise FileExistsError(errno.EEXIST, "no temporary name beside it is free", str(path))
    try:
        with os.fdopen(tfd, "wb" if binary else "w", **({} if binary else {"encoding": encoding})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        check(path)                   # planted while it was written: refused, not replaced
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str, mode: int = FILE_MODE, encoding: str = "utf-8") -> None:
    with open_for_write(path, mode=mode, encoding=encoding) as f:
        f.write(text)


def write_bytes(path: str | os.PathLike, data: bytes, mode: int = FILE_MODE) -> None:
    with open_for_write(path, binary=True, mode=mode) as f:
        f.write(data)


def write_text_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """write_text with an encoding (export's callers)."""
    write_text(path, text, encoding=encoding)


def option_error(option: str, path: str | os.PathLike, e: OSError, fix: str = "give a regular file path") -> str:
    """The one sentence for a file an option names that cannot be written."""
    return f"{option} {printable(os.fspath(path), 120)} is not a file rtgauge can write ({reason(e)}); {fix}."


def check_option(option: str, path: str | os.PathLike | None, fix: str = "give a regular file path") -> None:
    """check(), as the UserError of an option (before anything is measured or read)."""
    if path is None or os.fspath(path) == "":
        return
    try:
        check(path)
    except OSError as e:
        raise UserError(option_error(option, path, e, fix)) from None


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
