"""collect_facts against fake /proc+/sys trees (known answers) and the live machine."""

from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest
from fake_system import FakeSystem, dynamic_kernel, mainline_desktop, rt_box

from rtgauge.bounds import format_cpu_list, parse_cpu_list
from rtgauge.sysinfo import collect_facts
from rtgauge.sysinfo.readers import bracketed_choice, parse_cmdline
from rtgauge.sysinfo.tools import VERSION_PATTERN


def facts_of(system: FakeSystem, tmp_path) -> dict:
    return collect_facts(system.build(str(tmp_path)))


# -- parsers ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
        ("5", [5]),
        ("", []),
        (None, []),
        ("0-7:2/4", [0, 1, 4, 5]),  # used/group syntax: 2 of every 4
        ("2-N", [2, 3]),  # N is the last CPU
        ("all", [0, 1, 2, 3]),
    ],
)
def test_parse_cpu_list(text, expected):
    assert parse_cpu_list(text, [0, 1, 2, 3]) == expected


def test_format_cpu_list_round_trips():
    for cpus in ([0], [0, 1, 2, 5], [1, 3, 5], list(range(64)), [7, 2, 3]):
        assert parse_cpu_list(format_cpu_list(cpus)) == sorted(cpus)
    assert format_cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_bracketed_choice_picks_the_active_value():
    assert bracketed_choice("always [madvise] never") == "madvise"
    assert bracketed_choice("[always] madvise never") == "always"
    assert bracketed_choice(None) is None


def test_cmdline_ignores_init_arguments_and_last_wins():
    params = parse_cmdline('quiet isolcpus=1 isolcpus=2-3 foo="a" -- isolcpus=9 --init')
    assert params["isolcpus"] == "2-3"
    assert params["quiet"] == ""
    assert params["foo"] == "a"
    assert "--init" not in params


# -- fake machines ------------------------------------------------------------------

def test_rt_box_facts(tmp_path):
    f = facts_of(rt_box(), tmp_path)
    assert f["hostname"] == "fakehost"
    assert f["kernel_release"] == "6.1.0-18-rt-amd64"
    assert f["arch"] == "x86_64"
    assert f["cpu_model"].startswith("Intel(R) Core(TM) i7-3930K")
    assert f["cpus"] == 4 and f["cpus_list"] == [0, 1, 2, 3]
    assert f["physical_cores"] == 4
    assert f["smt"] == "off"
    assert f["preempt_model"] == "PREEMPT_RT"
    assert f["realtime"] is True
    assert f["isolcpus"] == [2, 3]
    assert f["nohz_full"] == [2, 3]
    assert f["rcu_nocbs"] == [2, 3]
    assert f["irqaffinity"] == [0, 1]
    assert f["governors"] == {str(c): "performance" for c in range(4)}
    assert [s["name"] for s in f["idle_states"]["states"]] == ["POLL", "C1", "C6"]
    assert f["idle_states"]["states"][2] == {
        "state": "state2", "name": "C6", "desc": "C6 idle state", "latency_us": 133, "disabled": True,
    }
    assert f["idle_states"]["driver"] == "intel_idle"
    assert f["idle_states"]["boot_params"] == {"processor.max_cstate": "1"}
    assert f["clocksource"] == {"current": "tsc", "available": ["tsc", "hpet", "acpi_pm"]}
    assert f["tsc_invariant"] is True
    assert (f["rt_runtime_us"], f["rt_period_us"]) == (950000, 1000000)
    assert f["swap_total_kb"] == 0
    assert f["thp"] == {"enabled": "madvise", "defrag": "madvise"}
    assert f["irqbalance_running"] is False
    assert f["tracefs_mounted"] is True
    assert f["timerlat_available"] is True and f["osnoise_available"] is True
    assert f["euid"] == 0 and f["cap_sys_nice"] is True
    assert f["rtprio_limit"] == 0 and f["memlock_limit"] == 8388608
    assert f["cpu_dma_latency_writable"] is True
    assert f["cgroup_v2"] is True
    assert f["virtualization"]["vm"] is False
    assert f["tools"] == {}  # a fake root never runs programs
    json.dumps(f)  # stored with the system record: must be plain JSON


def test_mainline_desktop_facts(tmp_path):
    f = facts_of(mainline_desktop(), tmp_path)
    assert f["preempt_model"] == "voluntary"
    assert f["smt"] == "on"
    assert f["physical_cores"] == 2
    assert f["governors"] == {str(c): "ondemand" for c in range(4)}
    assert f["clocksource"]["current"] == "hpet"
    assert f["swap_total_kb"] == 2097152
    assert f["thp"]["enabled"] == "always"
    assert f["irqbalance_running"] is True
    assert f["tracefs_mounted"] is False
    # no tracefs: the kernel config answers instead
    assert f["timerlat_available"] is False and f["tracers_source"] == "kernel config"
    assert f["euid"] == 1000 and f["cap_sys_nice"] is False
    assert f["isolcpus"] == [] and f["nohz_full"] == []
    assert f["kernel_hz"] == 250
    assert f["nmi_watchdog"] == 1


def test_missing_cpufreq_gives_no_governors(tmp_path):
    f = facts_of(FakeSystem(governor=None), tmp_path)
    assert f["governors"] == {}
    assert f["cpufreq_driver"] is None


def test_preempt_dynamic_reads_debugfs_mode(tmp_path):
    f = facts_of(dynamic_kernel("none voluntary (full) lazy"), tmp_path)
    assert f["preempt_model"] == "dynamic (full)"


def test_preempt_dynamic_other_active_mode(tmp_path):
    f = facts_of(dynamic_kernel("(none) voluntary full"), tmp_path)
    assert f["preempt_model"] == "dynamic (none)"


def test_preempt_dynamic_without_debugfs_uses_boot_mode(tmp_path):
    system = dynamic_kernel(None)
    f = facts_of(system, tmp_path / "a")
    assert f["preempt_model"] == "dynamic (mode unknown)"
    assert f["preempt_dynamic_boot_mode"] == "voluntary"  # the build default
    system.cmdline += " preempt=full"
    f = facts_of(system, tmp_path / "b")
    assert f["preempt_dynamic_boot_mode"] == "full"  # preempt= overrides it


@pytest.mark.parametrize(
    "version, config, expected",
    [
        ("#1 SMP PREEMPT Tue Jan 1", None, "full"),
        ("#1 SMP PREEMPT_LAZY Tue Jan 1", None, "lazy"),
        ("#1 SMP PREEMPT_RT Tue Jan 1", None, "PREEMPT_RT"),
        ("#1 SMP Tue Jan 1", {"CONFIG_PREEMPT_NONE": "y"}, "none"),
        ("#1 SMP Tue Jan 1", None, "voluntary or none"),
    ],
)
def test_preemption_model_from_version_and_config(tmp_path, version, config, expected):
    f = facts_of(FakeSystem(version=version, config=config), tmp_path)
    assert f["preempt_model"] == expected


def test_realtime_file_wins(tmp_path):
    # Some RT kernels print only "PREEMPT" in uname -v; /sys/kernel/realtime is the truth.
    f = facts_of(FakeSystem(version="#1 SMP PREEMPT", realtime=True), tmp_path)
    assert f["preempt_model"] == "PREEMPT_RT"


def test_smt_inferred_from_siblings_without_control_file(tmp_path):
    f = facts_of(FakeSystem(smt_control=None, core_of=[0, 0, 1, 1]), tmp_path / "on")
    assert f["smt"] == "on" and f["physical_cores"] == 2
    f = facts_of(FakeSystem(smt_control=None), tmp_path / "off")
    assert f["smt"] == "off" and f["physical_cores"] == 4


def test_isolcpus_flags_are_not_cpus(tmp_path):
    system = FakeSystem(cmdline="ro isolcpus=nohz,domain,managed_irq,1-3", isolated_sysfs="")
    assert facts_of(system, tmp_path)["isolcpus"] == [1, 2, 3]


def test_irqbalance_found_among_processes(tmp_path):
    f = facts_of(FakeSystem(processes=["init", "irqbalance"]), tmp_path / "a")
    assert f["irqbalance_running"] is True
    f = facts_of(FakeSystem(processes=["init", "irqbalancer-not"]), tmp_path / "b")
    assert f["irqbalance_running"] is False


def test_unprivileged_user_with_rtprio_limit(tmp_path):
    system = FakeSystem(uid=1000, cap_eff="0000000000000000", rtprio_limit="99", memlock_limit="unlimited")
    f = facts_of(system, tmp_path)
    assert f["euid"] == 1000
    assert f["cap_sys_nice"] is False and f["cap_ipc_lock"] is False
    assert f["rtprio_limit"] == 99 and f["memlock_limit"] == "unlimited"


def test_virtual_machine_detected_from_dmi(tmp_path):
    system = FakeSystem(dmi_vendor="QEMU", dmi_product="Standard PC (Q35 + ICH9, 2009)",
                        cpu_flags="fpu tsc hypervisor")
    v = facts_of(system, tmp_path)["virtualization"]
    assert v["vm"] is True and v["hypervisor"] == "QEMU"
    assert any("hypervisor" in e for e in v["evidence"])


def test_empty_root_gives_unknowns_not_errors(tmp_path):
    (tmp_path / "proc").mkdir()
    f = collect_facts(str(tmp_path))
    assert f["cpus"] == 0
    assert f["kernel_release"] is None
    assert f["preempt_model"] is None
    assert f["governors"] == {}
    assert f["timerlat_available"] is None
    assert f["rt_runtime_us"] is None
    json.dumps(f)


def test_tool_version_pattern():
    assert VERSION_PATTERN.search("cyclictest V 2.40\nUsage:").group(1) == "2.40"
    assert VERSION_PATTERN.search("stress-ng, version 0.15.06 (gcc 12.2.0)").group(1) == "0.15.06"


# -- the live machine ---------------------------------------------------------------

@pytest.fixture(scope="module")
def live():
    return collect_facts("/")


@pytest.mark.shared
def test_live_cpus_and_kernel(live):
    assert live["cpus"] == os.cpu_count()
    assert len(live["cpus_list"]) == live["cpus"]
    assert live["kernel_release"] == os.uname().release
    assert live["kernel_version"] == os.uname().version
    assert live["arch"] == os.uname().machine
    assert live["hostname"] == os.uname().nodename
    assert live["euid"] == os.geteuid()
    with open("/proc/sys/kernel/sched_rt_runtime_us") as fh:
        assert live["rt_runtime_us"] == int(fh.read())


def test_live_clocksource_is_one_of_the_available(live):
    cs = live["clocksource"]
    assert cs["current"] in cs["available"]


def test_live_timerlat_matches_what_the_kernel_says(live):
    for path in ("/sys/kernel/tracing/available_tracers", "/sys/kernel/debug/tracing/available_tracers"):
        if os.path.exists(path):
            with open(path) as fh:
                assert live["timerlat_available"] == ("timerlat" in fh.read().split())
            return
    if os.path.exists("/proc/config.gz"):
        with gzip.open("/proc/config.gz", "rt") as fh:
            built_in = "CONFIG_TIMERLAT_TRACER=y" in fh.read().splitlines()
        assert live["timerlat_available"] == built_in
        assert live["tracers_source"] == "kernel config"
    else:
        assert live["timerlat_available"] is None


def test_live_tools_match_path(live):
    for name, version in live["tools"].items():
        assert (version is None) == (shutil.which(name) is None)
    if shutil.which("cyclictest"):
        assert live["tools"]["cyclictest"][0].isdigit()


def test_live_preempt_model_agrees_with_uname(live):
    version = os.uname().version.split()
    if "PREEMPT_RT" in version:
        assert live["preempt_model"] == "PREEMPT_RT"
    elif "PREEMPT_DYNAMIC" in version:
        assert live["preempt_model"].startswith("dynamic (")
