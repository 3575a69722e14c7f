"""Small readers for /proc and /sys files, all relative to a root directory so a
test can point them at a fake tree."""

from __future__ import annotations

import gzip
import os
import re


def under(root: str, path: str) -> str:
    """`path` (absolute, as on the live system) inside `root`."""
    return os.path.join(root, path.lstrip("/"))


def read_text(root: str, path: str) -> str | None:
    """The file's text stripped of surrounding whitespace, or None when it cannot be read
    (missing, permission denied, a directory): absent facts are data, not errors."""
    try:
        with open(under(root, path), encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


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


def parse_cpu_list(text: str | None, all_cpus: list[int] | None = None) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]. The kernel also accepts 'all' and a
    trailing 'N' for the last CPU in boot parameters; those need the online list."""
    if not text:
        return []
    cpus: set[int] = set()
    last = max(all_cpus) if all_cpus else None
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part == "all":
            cpus.update(all_cpus or [])
            continue
        part = part.replace("N", str(last)) if last is not None else part
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+)/(\d+))?)?", part)
        if not m:
            continue
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
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
    text = None
    try:
        with gzip.open(under(root, "/proc/config.gz"), "rt", errors="replace") as f:
            text = f.read()
    except (OSError, EOFError):
        if release:
            text = read_text(root, f"/boot/config-{release}")
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
