"""Small readers for /proc and /sys files, all relative to a root directory so a
test can point them at a fake tree."""

from __future__ import annotations

import gzip
import io
import os
import re
import stat


# The most read of any one file (a board's or a --root tree's): /proc/cpuinfo of an 8192-CPU
# machine is ~1 MB. A larger file, or one that is not a regular file (a FIFO, /dev/zero),
# is not read: the fact is absent, the host's memory bounded (docs/design.md).
FILE_READ_MAX = 4 * 1024 * 1024


def read_bounded(path: str, limit: int = FILE_READ_MAX) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes, else None. Never blocks on a
    FIFO (opened non-blocking, checked to be a regular file before reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def under(root: str, path: str) -> str:
    """`path` (absolute, as on the live system) inside `root`."""
    return os.path.join(root, path.lstrip("/"))


def read_text(root: str, path: str) -> str | None:
    """The file's text stripped of surrounding whitespace, or None when it cannot be read
    (missing, permission denied, a directory): absent facts are data, not errors."""
    data = read_bounded(under(root, path))
    return None if data is None else data.decode("utf-8", errors="replace").strip()


def read_int(root: str, path: str) -> int | None:
    text = read_text(root, path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def list_dir(root: str, path: str) -> list[str]:
    try:
        return sorted(os.listdir(under(root, path)))
    except OSError:
        return []


def exists(root: str, path: str) -> bool:
    return os.path.exists(under(root, path))


def bracketed_choice(text: str | None) -> str | None:
    """'always [madvise] never' -> 'madvise': sysfs marks the active value in brackets."""
    if not text:
        return None
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text.split()[0]


def parse_cmdline(text: str | None) -> dict[str, str]:
    """Kernel boot parameters as {name: value} ('' for a bare flag); the last occurrence
    wins, as in the kernel. Everything after '--' belongs to init, not the kernel."""
    params: dict[str, str] = {}
    for token in (text or "").split():
        if token == "--":
            break
        name, _, value = token.partition("=")
        params[name] = value.strip('"')
    return params


def read_kernel_config(root: str, release: str | None) -> dict[str, str]:
    """CONFIG_* options of the running kernel from /proc/config.gz or
    /boot/config-RELEASE; {} when neither exists."""
    config = kernel_config_of_gz(read_bounded(under(root, "/proc/config.gz")))
    if config is None:
        config = parse_kernel_config(read_text(root, f"/boot/config-{release}") if release else None)
    return config


def kernel_config_of_gz(packed: bytes | None) -> dict[str, str] | None:
    """CONFIG_* options of a gzipped kernel config (/proc/config.gz, or a copy of it);
    None when it is missing or not gzip."""
    try:
        if packed is None:
            return None
        with gzip.GzipFile(fileobj=io.BytesIO(packed)) as f:
            data = f.read(FILE_READ_MAX + 1)      # a gzip bomb stops at the bound
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return parse_kernel_config(data.decode("utf-8", errors="replace") if len(data) <= FILE_READ_MAX else None)


def parse_kernel_config(text: str | None) -> dict[str, str]:
    config: dict[str, str] = {}
    for line in (text or "").splitlines():
        if line.startswith("CONFIG_"):
            name, _, value = line.partition("=")
            config[name] = value
    return config


def parse_key_value_lines(text: str | None, sep: str = ":") -> dict[str, str]:
    """'Name:\\tvalue' lines (/proc/self/status, /proc/meminfo, /proc/cpuinfo blocks)."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, found, value = line.partition(sep)
        if found:
            out.setdefault(key.strip(), value.strip())
    return out
