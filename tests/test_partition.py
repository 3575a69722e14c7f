"""CPU partitioning: rt, load and housekeeping CPUs by affinity and, where the kernel
allows, a cpuset per role (removed afterwards); stored with every measurement."""

import os
from pathlib import Path

import pytest

from conftest import needs_root
from rtgauge.errors import UserError
from rtgauge.loads import LoadContext, make_load
from rtgauge.loads.partition import apply_cpusets, find_cpuset_root, plan_partition
from rtgauge.store import open_store
from test_loads import rtgauge

pytestmark = pytest.mark.alone

CPUS = sorted(os.sched_getaffinity(0))
two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="partitioning needs at least two CPUs")


def test_partition_fills_in_roles():
    p = plan_partition("3", None, None, [0, 1, 2, 3])
    assert (p.rt_cpus, p.load_cpus, p.housekeeping_cpus) == ([3], [0, 1, 2], [0, 1, 2])
    p = plan_partition("2-3", "1", None, [0, 1, 2, 3])
    assert (p.load_cpus, p.housekeeping_cpus) == ([1], [0])
    assert p.engine_cpuset_cpus() == [0, 2, 3]
    assert plan_partition(None, None, None, [0, 1]) is None


def test_partition_errors_are_one_sentence():
    with pytest.raises(UserError, match="not a CPU list"):
        plan_partition("one", None, None, [0, 1])
    with pytest.raises(UserError, match="CPU 7 is not one rtgauge may use"):
        plan_partition("7", None, None, [0, 1])
    with pytest.raises(UserError, match="overlaps the measured CPUs"):
        plan_partition("1", None, "1", [0, 1])


def test_cpuset_detection_on_a_fake_hybrid_tree(tmp_path):
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mounts").write_text(
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    (tmp_path / "sys/fs/cgroup/unified").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/unified/cgroup.controllers").write_text("\n")
    base, why = find_cpuset_root(str(tmp_path))
    assert base is None and "no cpuset controller" in why
    (tmp_path / "sys/fs/cgroup/unified/cgroup.controllers").write_text("cpuset cpu io\n")
    base, why = find_cpuset_root(str(tmp_path))
    assert base.version == 2


@needs_root
@two_cpus
def test_load_runs_on_its_cpus_in_its_cpuset(tmp_path):
    p = apply_cpusets(plan_partition(str(CPUS[-1]), str(CPUS[0]), None))
    try:
        load = make_load("cpu", LoadContext(cpus=p.load_cpus, cgroup_procs=p.procs_file("load")))
        load.start()
        try:
            from rtgauge.loads import session_pids
            pids = session_pids(load.proc.pid)
            assert pids and all(os.sched_getaffinity(pid) == {CPUS[0]} for pid in pids)
            if p.cpusets:
                members = set(map(int, Path(p.procs_file("load")).read_text().split()))
                assert set(pids) <= members
        finally:
            delivered = load.stop()
        assert delivered["cpus"] == [CPUS[0]] and delivered["workers"] == 1
    finally:
        if p.cpusets:
            p.cpusets.remove()
    if p.cpusets:
        assert not p.cpusets.group.exists()
    else:
        assert "unavailable" in p.cpuset_note


@needs_root
@two_cpus
def test_run_with_partition_measures_on_rt_cpus_and_stores_it(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text("""
name = "part"
[settings]
warmup_s = 0.3
[[jobs]]
name = "latency"
test = "latency"
conditions = ["cpu"]
[jobs.options]
duration-s = 2
""")
    db = tmp_path / "r.db"
    rt, load = CPUS[-1], CPUS[0]
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report",
                "--rt-cpus", str(rt), "--load-cpus", str(load))
    assert p.returncode in (0, 1), p.stderr
    with open_store(str(db)) as store:
        (m,) = store.get_run(store.latest_run_id()).to_dict()["measurements"]
    assert [t["cpu"] for t in m["document"]["env"]["threads"]] == [rt]
    part = m["load"]["partition"]
    assert part["rt_cpus"] == str(rt) and part["load_cpus"] == str(load)
    assert m["load"]["cpus"] == [load] and m["load"]["cpu_s"] > 0.5
    if part["cpuset"]:
        assert not Path(part["cpuset"]["group"]).exists(), "the cpuset group was not removed"
    else:
        assert "unavailable" in part["cpuset_note"]
