"""A cpio archive in the "newc" format the Linux kernel unpacks as an initramfs
(the kernel's Documentation/driver-api/early-userspace/buffer-format.rst), written
from a directory tree: files, directories, symbolic links and device nodes, owned
by root (a root file system built here as root keeps its owners)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def _header(f, name: str, st: os.stat_result | None, size: int, ino: int) -> None:
    if st is None:         # the trailer
        fields = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, len(name) + 1, 0]
    else:
        fields = [ino, st.st_mode, st.st_uid, st.st_gid, 1, int(st.st_mtime), size, 0, 0,
                  os.major(st.st_rdev), os.minor(st.st_rdev), len(name) + 1, 0]
    f.write(b"070701" + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0")
    _pad(f)


def _pad(f) -> None:
    f.write(b"\0" * (-f.tell() % 4))


def write(tree: Path, out: Path, prefix: str = "") -> None:
    """`tree` as a newc archive `out`; its paths are relative, under `prefix` when given."""
    tree = Path(tree)
    ino = 1
    with open(out, "wb") as f:
        def add(path: Path, name: str) -> None:
            nonlocal ino
            st = os.lstat(path)
            ino += 1
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(path).encode()
                _header(f, name, st, len(target), ino)
                f.write(target)
            elif stat.S_ISREG(st.st_mode):
                _header(f, name, st, st.st_size, ino)
                with open(path, "rb") as src:
                    while chunk := src.read(1 << 20):
                        f.write(chunk)
            elif stat.S_ISDIR(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) \
                    or stat.S_ISFIFO(st.st_mode):
                _header(f, name, st, 0, ino)
            else:            # sockets: nothing to keep
                return
            _pad(f)

        parts = [p for p in prefix.strip("/").split("/") if p]
        for i in range(len(parts)):          # the prefix's directories first
            add(tree, "/".join(parts[: i + 1]))
        for dirpath, dirnames, filenames in os.walk(tree):
            dirnames.sort()
            rel = os.path.relpath(dirpath, tree)
            for n in sorted(dirnames) + sorted(filenames):
                name = n if rel == "." else f"{rel}/{n}"
                add(Path(dirpath, n), "/".join(parts + [name]))
        _header(f, "TRAILER!!!", None, 0, 0)
        f.write(b"\0" * (-f.tell() % 512))
