"""The evaluation suite's profile as published where Linux allows it: SEM-P-ARC's
waiters at as many distinct priorities as SCHED_FIFO leaves (docs/micro.md)."""

from __future__ import annotations

import pytest

from rtgauge.profiles import load_profile

pytestmark = pytest.mark.shared


def test_sem_p_arc_waiters_take_every_level_fifo_leaves(run_engine):
    for name in ("rtos-evaluation", "rtos-evaluation-quick"):
        [job] = [j for j in load_profile(name).jobs if j.test == "sem"]
        assert job.options["priority"] == 1, name
    r = run_engine("sem", "--priority", "1", "--waiters", "128", "--iterations", "50", timeout=120)
    assert r.status == 0, r.stderr
    # 1..99 real-time levels: the watchdog holds 99, the measuring thread 1
    assert r.doc["env"]["waiter_priorities"] == {"lowest": 2, "highest": 98, "distinct": 97}
    assert r.doc["metrics"]["not_highest"]["value"] == 0
