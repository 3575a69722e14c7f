"""rtgauge tune: apply then revert leaves every touched file byte for byte as before;
run --tuned reverts after the run, also when it fails or gets SIGTERM; the RT
throttling watchdog restores the limit by itself (tested on a fake tree only: the
real limit is never lifted by the tests)."""

import glob
import json
import os
import signal
from pathlib import Path

import pytest

from conftest import needs_root
from readiness import engine_measuring, wait_for
from rtgauge import tune
from rtgauge.errors import UserError
from test_loads import rtgauge_popen, wait_until

pytestmark = pytest.mark.alone


def touched_files() -> list[str]:
    return sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
                  + [p for p in tune.THP_FILES if os.path.exists(p)]
                  + glob.glob("/proc/irq/*/smp_affinity_list") + ["/proc/irq/default_smp_affinity"])


def snapshot() -> dict[str, bytes]:
    out = {}
    for p in touched_files():
        try:
            out[p] = Path(p).read_bytes()
        except OSError:
            pass
    return out


needs_two = pytest.mark.skipif(len(tune.online_cpus()) < 2, reason="needs two CPUs to move IRQs")


@needs_root
@needs_two
def test_apply_then_revert_is_byte_for_byte(tmp_path):
    state_path = tmp_path / "state.json"
    before = snapshot()
    online = tune.online_cpus()
    state = tune.apply(state_path, online[1:], online[:1])
    try:
        during = snapshot()
        assert state["changes"], "nothing was changed, so nothing is tested"
        for c in state["changes"]:
            assert during[c["path"]] != before[c["path"]]          # it really changed
            assert c["before"].encode("latin-1") == before[c["path"]]
        recorded = json.loads(state_path.read_text())
        assert recorded["changes"] == state["changes"]
        with pytest.raises(UserError, match="already tuned"):
            tune.apply(state_path, online[1:], online[:1])
    finally:
        tune.revert(state_path)
    assert snapshot() == before
    assert not state_path.exists()


def test_revert_without_state_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="nothing to revert"):
        tune.revert(tmp_path / "none.json")


def fake_tree(tmp_path) -> Path:
    root = tmp_path / "root"
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/sched_rt_runtime_us").write_text("950000")
    mm = root / "sys/kernel/mm/transparent_hugepage"
    mm.mkdir(parents=True)
    (mm / "enabled").write_text("never")        # already as wanted: left alone
    (mm / "defrag").write_text("never")
    for cpu in (0, 1):
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("powersave")
    return root


def test_watchdog_restores_rt_throttling_even_without_revert(tmp_path):
    root = fake_tree(tmp_path)
    rt = root / "proc/sys/kernel/sched_rt_runtime_us"
    state = tune.apply(tmp_path / "s.json", [1], [0], root=str(root), rt_unthrottled_for_s=1)
    assert rt.read_text() == "-1"
    assert {c["setting"] for c in state["changes"]} == {"governor", "rt_throttling"}
    assert (root / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").read_text() == "performance"
    # nobody reverts: the detached watchdog puts the limit back on its own
    assert wait_until(lambda: rt.read_text() == "950000", 10)
    tune.revert(tmp_path / "s.json")
    assert (root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text() == "powersave"


def test_revert_stops_the_watchdog(tmp_path):
    root = fake_tree(tmp_path)
    rt = root / "proc/sys/kernel/sched_rt_runtime_us"
    state = tune.apply(tmp_path / "s.json", [1], [0], root=str(root), rt_unthrottled_for_s=60)
    pid = state["watchdog"]["pid"]
    assert os.path.exists(f"/proc/{pid}")
    tune.revert(tmp_path / "s.json")
    assert rt.read_text() == "950000"
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}") or
                      open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 5)


PROFILE = """
name = "tuned"
[settings]
warmup_s = 0.2
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = {seconds}
{extra}
"""


@needs_root
@needs_two
@pytest.mark.parametrize("ending", ["complete", "failed", "SIGTERM"])
def test_run_tuned_reverts_after_the_run(ending, tmp_path, monkeypatch):
    monkeypatch.setenv("RTGAUGE_STATE_DIR", str(tmp_path / "state"))
    prof = tmp_path / "p.toml"
    # a failing job: an interval the engine refuses only at run time is hard to make, so the
    # failure is a load that dies at once (a clear error mid-run, after tuning was applied)
    conditions = '["command:exit 3"]' if ending == "failed" else '["idle"]'
    prof.write_text(PROFILE.format(seconds=20 if ending == "SIGTERM" else 1, extra="")
                    .replace('["idle"]', conditions))
    db = tmp_path / "r.db"
    before = snapshot()
    p = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report", "--tuned")
    state_path = tmp_path / "state" / "tune-state.json"
    if ending == "SIGTERM":
        assert wait_until(lambda: state_path.exists(), 60)
        assert snapshot() != before
        wait_for(lambda: engine_measuring(p.pid), "the tuned run's engine measuring", proc=p)
        p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert {"complete": (0, 1), "failed": (1, 2), "SIGTERM": (130,)}[ending].count(p.returncode), out + err
    assert snapshot() == before
    assert not state_path.exists()
