"""Who owns a run or a tuning: this process, named so that another process can tell
later whether the owner is still alive — on another boot, or with its pid reused,
it is not.

An owner is {"pid", "start_ticks" (the process start time from /proc/PID/stat),
"boot_id" (random per boot), "machine_id" (hashed), "host"}. alive(owner) answers
True (that very process runs), False (it is gone) or None (another machine: nobody
here can tell)."""

from __future__ import annotations

import hashlib
import os
import socket


def read_text(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def boot_id() -> str | None:
    return read_text("/proc/sys/kernel/random/boot_id")


def machine_hash() -> str | None:
    """The machine id, hashed: it names the machine without giving its id away."""
    raw = read_text("/etc/machine-id") or read_text("/var/lib/dbus/machine-id")
    return hash_machine_id(raw)


def hash_machine_id(raw) -> str | None:
    if not raw or not isinstance(raw, str):
        return None
    if raw.startswith("sha256:"):
        return raw
    return "sha256:" + hashlib.sha256(("rtgauge:" + raw).encode()).hexdigest()[:32]


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot; None when there is none."""
    text = read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    try:
        return int(text.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def me(pid: int | None = None) -> dict:
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start_ticks": start_ticks(pid), "boot_id": boot_id(),
            "machine_id": machine_hash(), "host": socket.gethostname()}


def alive(owner) -> bool | None:
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return None
    here = machine_hash()
    if owner.get("machine_id") and here and owner["machine_id"] != here:
        return None
    if owner.get("boot_id") != boot_id():
        return False if owner.get("machine_id") == here else None
    ticks = start_ticks(owner["pid"])
    return ticks is not None and ticks == owner.get("start_ticks")
