"""A load keeps rtgauge's weight where the kernel groups the fair scheduler by session
(autogroup): a load runs in a session of its own, whose group the kernel creates at
nice 0, and rtgauge gives it its own group's nice (rtgauge/loads/base.py,
keep_group_weight). Checked in a session of its own, at a positive nice (which needs no
privilege), so the test's pass keeps its own group's weight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(not Path("/proc/self/autogroup").exists(),
                                reason="this kernel does not group the fair scheduler by session (autogroup)")

PROBE = """
import json, subprocess, sys
from rtgauge.loads.base import keep_group_weight
with open("/proc/self/autogroup", "w") as f:
    f.write("7")
def group(pid):
    with open(f"/proc/{pid}/autogroup") as f:
        return f.read().split()
out = {}
for keep in (False, True):
    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        changed = keep_group_weight(p.pid) if keep else None
        out[str(keep)] = {"changed": changed, "own": group("self"), "load": group(p.pid)}
    finally:
        p.kill()
        p.wait()
print(json.dumps(out))
"""


def test_a_load_in_a_session_of_its_own_takes_rtgauges_group_nice():
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
                       start_new_session=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    kept, broken = out["True"], out["False"]
    assert kept["own"][-1] == "7"
    # the broken method: a new session's group is a group of its own, at nice 0
    assert broken["load"][0] != broken["own"][0] and broken["load"][-1] == "0"
    assert kept["changed"] is True and kept["load"][0] != kept["own"][0] and kept["load"][-1] == "7"
