"""Shared fixtures: the engine binary under test and a way to run it."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

import pytest

from rtgauge.enginebin import engine_path
from pgserver import postgres_server  # noqa: F401  (one server for the session)


@dataclass
class EngineResult:
    status: int
    doc: dict | None
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def engine_bin() -> str:
    """$RTGAUGE_ENGINE (the test command sets it to the Meson build) or the packaged one."""
    return engine_path()


@pytest.fixture(scope="session")
def run_engine(engine_bin):
    """run_engine("latency", "--duration-s", "1", timeout=30) -> EngineResult"""

    def run(*args: str, timeout: float = 60, check_json: bool = True) -> EngineResult:
        p = subprocess.run([engine_bin, *args], capture_output=True, text=True, timeout=timeout)
        doc = None
        if p.stdout.strip():
            doc = json.loads(p.stdout)
        elif check_json:
            raise AssertionError(f"engine printed no JSON (status {p.returncode}): {p.stderr}")
        return EngineResult(p.returncode, doc, p.stdout, p.stderr)

    return run


def is_root() -> bool:
    return os.geteuid() == 0


needs_root = pytest.mark.skipif(not is_root(), reason="needs root for SCHED_FIFO and mlockall")


def tracefs_in_kernel() -> bool:
    try:
        with open("/proc/filesystems") as f:
            return any(line.split()[-1] == "tracefs" for line in f if line.strip())
    except OSError:
        return False


# A machine in its fresh state has no tracefs mounted; the suite must not depend on
# a mount left by earlier work, nor change the host's mounts to show that path. This
# runs CMD in a private mount namespace (`unshare -m`) where every tracefs mount of
# the host is lazily unmounted first: what CMD mounts there vanishes with it, and
# other users of the machine see nothing.
UNMOUNT_TRACEFS = ('for m in $(awk \'$3 == "tracefs" {print $2}\' /proc/self/mounts | sort -r); do '
                   'umount -l "$m" || exit 97; done; exec "$@"')

needs_mount_namespace = pytest.mark.skipif(
    not is_root() or not tracefs_in_kernel() or subprocess.run(["sh", "-c", "command -v unshare"],
                                                                capture_output=True).returncode != 0,
    reason="needs root, unshare(1) and a kernel with tracefs")


def without_tracefs(cmd: list[str]) -> list[str]:
    """CMD as run on a machine where tracefs is not mounted (see UNMOUNT_TRACEFS)."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", UNMOUNT_TRACEFS, "sh", *cmd]
