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
