"""Write a file whole or not at all, never through a symlink.

`write_text_atomic(path, text)`: the text goes to a new temporary file in the same
directory (created O_EXCL|O_NOFOLLOW, mode 0666 less the umask, like open()), is flushed
to disk, then renamed over `path`. A failure part-way (a full disk, an encoding error,
Ctrl-C) leaves the previous file as it was and no temporary file behind; a symlink
planted at `path` is replaced by the new file, its target never written. Used by
`rtgauge export` (a shared helper for every file rtgauge writes is its own work; this
one is small on purpose so it can be replaced by that one)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_text_atomic(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise IsADirectoryError(21, "Is a directory", str(path))
    data = text.encode(encoding)
    directory = path.parent
    tmp = directory / f".{path.name[:200]}.{secrets.token_hex(6)}.tmp"
    umask = os.umask(0)
    os.umask(umask)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666 & ~umask)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.rename(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
