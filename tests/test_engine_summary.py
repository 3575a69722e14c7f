"""`rtgauge engine latency` on a terminal sums its document up as cyclictest does (a
`T:` line per thread, `# Min/Avg/Max Latencies`); into a pipe, or with --json, it
prints the document. The real engine runs, its stdout a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["engine", "latency", "--cycles", "200", "--interval-us", "1000", "--threads", "1", "--allow-fallback"]

pytestmark = pytest.mark.skipif(not os.environ.get("RTGAUGE_ENGINE"), reason="RTGAUGE_ENGINE is not set")


def on_terminal(*extra: str) -> tuple[int, str]:
    """(status, what the terminal showed) of `rtgauge ARGS EXTRA` with a pty as stdout."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "rtgauge", *ARGS, *extra], stdout=slave, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:          # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    status = p.wait(timeout=120)
    return status, b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_terminal_gets_cyclictests_summary():
    status, text = on_terminal()
    assert status == 0, text
    assert re.search(r"^T: 0 \( *\d+\) P:\d+ I:1000 C: +200 Min: +\d+ Avg: +\d+ Max: +\d+", text, re.M), text
    for label in ("Min", "Avg", "Max"):
        assert re.search(rf"^# {label} Latencies: \d{{5,}}$", text, re.M), text
    assert "{" not in text


def test_json_on_a_terminal_and_in_a_pipe():
    status, text = on_terminal("--json")
    assert status == 0
    assert json.loads(text)["test"] == "latency"
    p = subprocess.run([sys.executable, "-m", "rtgauge", *ARGS], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["metrics"]["ti"]["count"] == 200
