"""Full-system emulation told apart from hardware and from a hardware-assisted VM, in
the facts (from the machine's own files: DMI, the device tree, the clocksources, the
CPU flags) and in what the report says of a system's timings."""

from __future__ import annotations

from pathlib import Path

from fake_system import FakeSystem
from rtgauge.analysis.run.systems import emulation_note, fact_rows
from rtgauge.records import Run
from rtgauge.sysinfo import collect_facts
from rtgauge.sysinfo.checks import check_virtualization


def facts(tmp_path, system: FakeSystem, files: dict[str, str] | None = None) -> dict:
    root = system.build(str(tmp_path))
    for path, text in (files or {}).items():
        p = Path(root, path.lstrip("/"))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return collect_facts(root)


def test_qemu_without_kvm_clock_on_x86_is_emulation(tmp_path):
    f = facts(tmp_path, FakeSystem(dmi_vendor="QEMU", dmi_product="Standard PC (Q35 + ICH9, 2009)",
                                   cpu_flags="fpu tsc hypervisor"))
    v = f["virtualization"]
    assert v["vm"] and v["kind"] == "qemu-tcg" and v["emulated"] is True and f["emulated"] is True
    assert "timings not meaningful for hardware" in emulation_note(f)
    c = check_virtualization(f)
    assert c["status"] == "warn" and "full-system emulation" in c["value"]


def test_qemu_with_kvm_clock_is_a_virtual_machine_not_emulation(tmp_path):
    f = facts(tmp_path, FakeSystem(dmi_vendor="QEMU", dmi_product="Standard PC", cpu_flags="fpu tsc hypervisor"),
              {"/sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock tsc acpi_pm\n"})
    v = f["virtualization"]
    assert v["vm"] and v["kind"] == "kvm" and v["emulated"] is False
    assert emulation_note(f).startswith("virtual machine (kvm)")
    assert check_virtualization(f)["status"] == "info"


def test_qemu_arm_virt_board_is_seen_in_its_device_tree(tmp_path):
    system = FakeSystem(arch="armv7l", cpu_flags="", cpu_model="ARMv7 Processor rev 5 (v7l)")
    f = facts(tmp_path, system, {"/proc/device-tree/compatible": "linux,dummy-virt\0"})
    v = f["virtualization"]
    assert v["vm"] and v["hypervisor"] == "QEMU" and "device tree: linux,dummy-virt" in v["evidence"]
    assert v["emulated"] is None          # TCG or KVM: the guest cannot tell
    # the emulated lab says so on the kernel's command line; its word is kept as evidence
    f = facts(tmp_path / "lab", FakeSystem(arch="armv7l", cpu_flags="",
                                           cmdline="console=ttyAMA0 rtgauge.emulated=qemu-tcg"),
              {"/proc/device-tree/compatible": "linux,dummy-virt\0"})
    v = f["virtualization"]
    assert v["emulated"] is True and v["kind"] == "qemu-tcg" and len(v["evidence"]) == 2


def test_bare_metal_is_neither(tmp_path):
    f = facts(tmp_path, FakeSystem())
    assert f["virtualization"]["vm"] is False and f["emulated"] is False and emulation_note(f) is None


def test_the_systems_table_says_emulation_beside_hardware(tmp_path):
    emu = facts(tmp_path / "a", FakeSystem(dmi_vendor="QEMU", cpu_flags="fpu hypervisor"))
    metal = facts(tmp_path / "b", FakeSystem())
    runs = [Run(id=i, system=f, profile="p", status="complete") for i, f in ((1, emu), (2, metal))]
    [row] = [r for r in fact_rows(runs) if r["fact"] == "virtualisation"]
    assert row["values"][0].startswith("full-system emulation (qemu-tcg)") and row["values"][1] == "bare metal"
    assert row["differs"]
