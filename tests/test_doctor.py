"""run_doctor verdicts on known machines, and the `rtgauge doctor` command."""

from __future__ import annotations

from conftest import cli
import argparse
import json
import os
import subprocess
import sys

import pytest
from fake_system import FakeSystem, dynamic_kernel, mainline_desktop, rt_box

from rtgauge.cli import doctor as doctor_cli
from rtgauge.cli.parsers import doctor as doctor_parser
from rtgauge.sysinfo import collect_facts, run_doctor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def verdicts(facts: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in run_doctor(facts)}


def by_name(facts: dict, name: str) -> dict:
    return next(c for c in run_doctor(facts) if c["name"] == name)


def build(system: FakeSystem, tmp_path) -> dict:
    return collect_facts(system.build(str(tmp_path)))


def test_every_check_has_the_contract_shape(tmp_path):
    for i, system in enumerate((rt_box(), mainline_desktop(), dynamic_kernel())):
        checks = run_doctor(build(system, tmp_path / str(i)))
        names = [c["name"] for c in checks]
        assert len(names) == len(set(names))
        for c in checks:
            assert set(c) == {"name", "status", "value", "advice"}
            assert c["status"] in ("ok", "info", "warn", "bad")
            assert c["value"]
            # anything to fix says how
            if c["status"] in ("warn", "bad"):
                assert c["advice"], c


def test_rt_box_is_ok_where_it_was_tuned(tmp_path):
    v = verdicts(build(rt_box(), tmp_path))
    for name in ("privileges", "memlock", "preemption", "governor", "smt", "isolation",
                 "idle_states", "clocksource", "swap", "thp", "irqbalance", "timerlat",
                 "cpu_dma_latency", "virtualization", "nmi_watchdog"):
        assert v[name] == "ok", name
    # throttling on is the default: a warning that explains, never "ok"
    assert v["rt_throttling"] == "warn"


def test_mainline_desktop_gets_the_right_complaints(tmp_path):
    facts = build(mainline_desktop(), tmp_path)
    v = verdicts(facts)
    assert v["preemption"] == "bad"
    assert v["privileges"] == "bad"  # uid 1000, no CAP_SYS_NICE, RLIMIT_RTPRIO 0
    assert v["clocksource"] == "bad"
    assert v["governor"] == "warn"
    assert v["smt"] == "warn"
    assert v["isolation"] == "warn"
    assert v["idle_states"] == "warn"
    assert v["swap"] == "warn"
    assert v["thp"] == "warn"
    assert v["irqbalance"] == "warn"
    assert v["nmi_watchdog"] == "warn"
    assert v["timerlat"] == "info"
    assert v["memlock"] == "warn"
    # the advice names the concrete fixes
    assert "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource" in by_name(
        facts, "clocksource")["advice"]
    assert "performance" in by_name(facts, "governor")["advice"]
    assert "isolcpus=managed_irq,domain,1-3" in by_name(facts, "isolation")["advice"]
    assert "nohz_full=1-3" in by_name(facts, "isolation")["advice"]
    idle = by_name(facts, "idle_states")
    assert "C3 33 µs" in idle["value"] and "C6 133 µs" in idle["value"]
    assert "C1" not in idle["value"]  # 2 µs is not deep
    assert "/dev/cpu_dma_latency" in idle["advice"]
    assert "madvise" in by_name(facts, "thp")["advice"]
    assert "irqbalance" in by_name(facts, "irqbalance")["advice"]


def test_dynamic_full_is_a_warning_with_rt_advice(tmp_path):
    c = by_name(build(dynamic_kernel("none voluntary (full) lazy"), tmp_path), "preemption")
    assert c["status"] == "warn"
    assert "full" in c["value"]
    assert "PREEMPT_RT" in c["advice"]


def test_dynamic_none_is_bad_and_says_preempt_full(tmp_path):
    c = by_name(build(dynamic_kernel("(none) voluntary full lazy"), tmp_path), "preemption")
    assert c["status"] == "bad"
    assert "preempt=full" in c["advice"]


def test_dynamic_unknown_mode_reports_boot_mode(tmp_path):
    c = by_name(build(dynamic_kernel(None), tmp_path), "preemption")
    assert "mode unknown" in c["value"] and "voluntary" in c["value"]
    assert c["status"] == "bad"
    assert "debugfs" in c["advice"]


def test_missing_cpufreq_is_info_not_a_failure(tmp_path):
    c = by_name(build(FakeSystem(governor=None), tmp_path), "governor")
    assert c["status"] == "info"
    assert "no cpufreq" in c["value"]


@pytest.mark.parametrize(
    "facts, expected",
    [
        ({"euid": 0, "cap_sys_nice": True, "rtprio_limit": 0}, "ok"),
        ({"euid": 1000, "cap_sys_nice": False, "rtprio_limit": 99}, "ok"),
        ({"euid": 1000, "cap_sys_nice": False, "rtprio_limit": "unlimited"}, "ok"),
        ({"euid": 1000, "cap_sys_nice": False, "rtprio_limit": 50}, "warn"),
        ({"euid": 1000, "cap_sys_nice": False, "rtprio_limit": 0}, "bad"),
        ({"euid": 0, "cap_sys_nice": False, "rtprio_limit": 0}, "bad"),  # root in a container
        ({"euid": 1000, "cap_sys_nice": True, "rtprio_limit": 0}, "ok"),  # setcap'd binary
    ],
)
def test_privileges(facts, expected):
    assert by_name(facts, "privileges")["status"] == expected


def test_rt_group_budget_of_zero_is_bad():
    assert by_name({"cgroup_rt_runtime_us": 0}, "rt_cgroup")["status"] == "bad"
    assert by_name({"cgroup_rt_runtime_us": 950000}, "rt_cgroup")["status"] == "ok"
    assert "rt_cgroup" not in verdicts({"cgroup_rt_runtime_us": None})


def test_rt_throttling_on_and_off():
    on = by_name({"rt_runtime_us": 950000, "rt_period_us": 1000000}, "rt_throttling")
    assert on["status"] == "warn"
    assert "95%" in on["value"] and "950000/1000000" in on["value"]
    assert "sched_rt_runtime_us=-1" in on["advice"] and "sleep" in on["advice"]  # with a watchdog
    off = by_name({"rt_runtime_us": -1, "rt_period_us": 1000000}, "rt_throttling")
    assert off["status"] == "warn"
    assert "sched_rt_runtime_us=950000" in off["advice"]
    assert by_name({"rt_runtime_us": 1000000, "rt_period_us": 1000000}, "rt_throttling")["status"] == "ok"


@pytest.mark.parametrize(
    "model, expected",
    [
        ("PREEMPT_RT", "ok"), ("full", "warn"), ("lazy", "warn"), ("voluntary", "bad"),
        ("none", "bad"), ("dynamic (full)", "warn"), ("dynamic (voluntary)", "bad"),
        ("dynamic (lazy)", "warn"),
    ],
)
def test_preemption_verdicts(model, expected):
    assert by_name({"preempt_model": model, "arch": "x86_64"}, "preemption")["status"] == expected


def test_idle_states_disabled_or_idle_poll_are_ok():
    deep_disabled = {"idle_states": {"driver": "intel_idle", "states": [
        {"name": "C1", "latency_us": 2, "disabled": False},
        {"name": "C6", "latency_us": 133, "disabled": True}], "boot_params": {}}}
    assert by_name(deep_disabled, "idle_states")["status"] == "ok"
    poll = {"idle_states": {"driver": "intel_idle", "states": [
        {"name": "C6", "latency_us": 133, "disabled": False}], "boot_params": {"idle": "poll"}}}
    assert by_name(poll, "idle_states")["status"] == "ok"
    threshold = {"idle_states": {"driver": "x", "states": [
        {"name": "C1E", "latency_us": 10, "disabled": False},
        {"name": "C3", "latency_us": 11, "disabled": False}], "boot_params": {}}}
    c = by_name(threshold, "idle_states")
    assert c["status"] == "warn" and "C3" in c["value"] and "C1E" not in c["value"]


@pytest.mark.parametrize(
    "current, expected",
    [("tsc", "ok"), ("kvm-clock", "ok"), ("arch_sys_counter", "ok"), ("hpet", "bad"),
     ("acpi_pm", "bad"), ("jiffies", "bad")],
)
def test_clocksource_verdicts(current, expected):
    facts = {"clocksource": {"current": current, "available": [current]}, "tsc_invariant": True}
    assert by_name(facts, "clocksource")["status"] == expected


def test_thp_defrag_always_also_warns():
    assert by_name({"thp": {"enabled": "madvise", "defrag": "always"}}, "thp")["status"] == "warn"
    assert by_name({"thp": {"enabled": "never", "defrag": "never"}}, "thp")["status"] == "ok"


def test_timerlat_verdicts():
    assert by_name({"timerlat_available": True, "tracefs_mounted": True}, "timerlat")["status"] == "ok"
    c = by_name({"timerlat_available": False, "tracers_source": "available_tracers"}, "timerlat")
    assert c["status"] == "info" and "CONFIG_TIMERLAT_TRACER" in c["advice"]
    c = by_name({"timerlat_available": True, "tracefs_mounted": False}, "timerlat")
    assert "mount -t tracefs" in c["advice"]


def test_virtualization_is_information():
    vm = {"virtualization": {"vm": True, "hypervisor": "KVM", "evidence": ["clocksource kvm-clock"]}}
    c = by_name(vm, "virtualization")
    assert c["status"] == "info" and "KVM" in c["value"] and "hypervisor" in c["advice"]


def test_isolation_partial_asks_for_nohz_full():
    facts = {"cpus_list": [0, 1, 2, 3], "isolcpus": [2, 3], "nohz_full": [], "rcu_nocbs": [2, 3]}
    c = by_name(facts, "isolation")
    assert c["status"] == "ok"
    assert "nohz_full=2-3" in c["advice"] and "rcu_nocbs=" not in c["advice"]


def test_single_cpu_isolation_is_info():
    assert by_name({"cpus_list": [0]}, "isolation")["status"] == "info"


def test_doctor_is_pure():
    facts = {"cpus_list": [0, 1], "smt": "on", "governors": {"0": "powersave", "1": "performance"}}
    snapshot = json.dumps(facts, sort_keys=True)
    first = run_doctor(facts)
    assert run_doctor(facts) == first
    assert json.dumps(facts, sort_keys=True) == snapshot
    assert by_name(facts, "governor")["value"] == "performance (cpu 1), powersave (cpu 0)"


# -- the command ---------------------------------------------------------------------

def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    doctor_parser.register(parser.add_subparsers())   # the options; the command is doctor_cli's
    args = parser.parse_args(["doctor", *argv])
    return doctor_cli.doctor(args)


def test_cli_json_on_fake_root(tmp_path, capsys):
    root = mainline_desktop().build(str(tmp_path))
    assert run_cli("--json", "--root", root) == 0  # advice only: warnings do not fail
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["kernel_release"] == "5.15.0-91-generic"
    assert {c["name"]: c["status"] for c in doc["checks"]}["preemption"] == "bad"


def test_cli_strict_fails_only_on_bad(tmp_path, capsys):
    assert run_cli("--strict", "--root", mainline_desktop().build(str(tmp_path / "bad"))) == 1
    assert run_cli("--strict", "--root", rt_box().build(str(tmp_path / "good"))) == 0
    out = capsys.readouterr().out
    assert "0 bad" in out


def test_cli_table_names_every_check(tmp_path, capsys):
    root = mainline_desktop().build(str(tmp_path))
    run_cli("--root", root)
    out = capsys.readouterr().out
    for name in ("privileges", "rt_throttling", "preemption", "governor", "smt", "isolation",
                 "idle_states", "clocksource", "swap", "thp", "irqbalance", "timerlat"):
        assert name in out
    assert "3 bad, " in out  # preemption, privileges, clocksource


def subprocess_env() -> dict:
    return {**os.environ, "PYTHONPATH": REPO, "COLUMNS": "200"}


def test_rtgauge_doctor_json_runs_on_this_machine():
    p = cli(["doctor", "--json"], timeout=60, env=subprocess_env(), cwd=REPO)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["facts"]["kernel_release"] == os.uname().release
    names = {c["name"] for c in doc["checks"]}
    assert {"privileges", "rt_throttling", "preemption", "timerlat"} <= names


def test_rtgauge_doctor_table_runs_on_this_machine():
    p = cli(["doctor"], timeout=60, env=subprocess_env(), cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "rt_throttling" in p.stdout
    assert " bad, " in p.stdout and " warn" in p.stdout


def test_bad_root_is_one_sentence_exit_2(tmp_path):
    p = cli(["doctor", "--root", str(tmp_path / "nope")], timeout=60, env=subprocess_env(), cwd=REPO)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "--root" in p.stderr
