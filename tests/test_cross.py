"""Engines for other architectures (docs/cross.md).

Each architecture's engine is cross-built once per session from these sources
with the shipped cross file (cached in build/cross by the hash of the sources,
so a rerun builds nothing) and run under qemu-user: its C unit tests, then short
engine tests whose documents must say what really ran there: the emulated
machine, this host's kernel, and no real-time scheduling.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from rtgauge.errors import UserError
from rtgauge.remote import engines

REPO = Path(__file__).resolve().parent.parent
# The C unit tests run under qemu by default; `tire` (thousands of barrier steps of
# a thread team) takes 40-100 s per architecture there, so it runs on request.
C_TESTS = ["clock", "json", "opts", "samples"] + (["tire"] if os.environ.get("RTGAUGE_CROSS_SLOW") else [])
# ELF e_machine and class of each architecture's binary
ELF = {"aarch64": (183, 64), "armhf": (40, 32), "riscv64": (243, 64)}
# what uname -m says under qemu-user for each
UNAME = {"aarch64": "aarch64", "armhf": "armv7l", "riscv64": "riscv64"}
ENGINE_MACHINE = {"aarch64": "aarch64", "armhf": "arm", "riscv64": "riscv64"}

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64",
                                reason="the cross files and qemu expectations are for an x86_64 Debian host")


def missing_tool(arch: engines.Arch) -> str | None:
    for exe, package in ((arch.compiler, arch.package), (arch.qemu, "qemu-user-static")):
        if shutil.which(exe) is None:
            return f"{exe} is not installed: scripts/setup.sh --all installs {package} (it needs root)"
    return None


@pytest.fixture(scope="session")
def builds() -> dict:
    """Every architecture's build started at once (each build is mostly one compiler at a
    time): name -> a future of its BuiltEngine."""
    from concurrent.futures import ThreadPoolExecutor
    cache = Path(os.environ.get(engines.CACHE_ENV) or REPO / "build" / "cross")
    pool = ThreadPoolExecutor(len(engines.ARCHES))
    futures = {name: pool.submit(engines.build, arch, src=REPO / "engine", cache=cache)
               for name, arch in engines.ARCHES.items() if missing_tool(arch) is None}
    yield futures
    pool.shutdown(wait=True)


@pytest.fixture(scope="session", params=list(engines.ARCHES))
def cross(request, builds) -> engines.BuiltEngine:
    arch = engines.ARCHES[request.param]
    missing = missing_tool(arch)
    if missing:
        pytest.skip(missing)
    return builds[arch.name].result()


def run(cross: engines.BuiltEngine, *args: str, timeout: float = 60) -> tuple[int, dict, str]:
    p = subprocess.run([*cross.command(), *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, json.loads(p.stdout), p.stderr


def test_the_binary_is_a_static_executable_of_the_architecture(cross):
    data = cross.binary.read_bytes()
    assert data[:4] == b"\x7fELF"
    bits = 64 if data[4] == 2 else 32
    machine = struct.unpack_from("<H", data, 18)[0]
    assert (machine, bits) == ELF[cross.arch.name]
    # static: no program header of type PT_INTERP (3), so the board needs no matching libc
    if bits == 64:
        phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    else:
        phoff, phentsize, phnum = struct.unpack_from("<I", data, 28)[0], *struct.unpack_from("<HH", data, 42)
    types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    assert 1 in types and 3 not in types, f"program headers {types}: dynamically linked"


def test_c_unit_tests_pass_under_qemu(cross):
    p = subprocess.run(["meson", "test", "-C", str(cross.build_dir), "--print-errorlogs", *C_TESTS],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    for name in C_TESTS:   # every requested test ran and passed (meson prints "N/M name OK")
        assert any(line.split()[1:3] == [name, "OK"] for line in p.stdout.splitlines()
                   if line[:1].isdigit()), f"{name} did not pass:\n{p.stdout}"


def test_realtime_is_refused_under_qemu(cross):
    status, doc, err = run(cross, "latency", "--duration-s", "0.1")
    assert status == 1 and doc["ok"] is False
    assert "user-mode emulator" in doc["error"] and "--allow-fallback" in doc["error"]
    assert doc["error"] in err


def test_behaviour_tests_refuse_emulation_even_with_fallback(cross):
    """Their verdicts are about real-time priority order: nothing to fall back to."""
    status, doc, err = run(cross, "pi", "--allow-fallback")
    assert status == 1 and doc["ok"] is False
    assert doc["error"].startswith("fifo is not real time here: the engine is built for")


def test_a_microbenchmark_under_qemu(cross):
    status, doc, err = run(cross, "shuffle", "--iterations", "500", "--allow-fallback")
    assert status == 0, err
    d = doc["metrics"]["shuffle"]
    assert d["count"] == 500 and 0 < d["min"] <= d["p50"] <= d["max"]
    assert doc["env"]["emulated"] is True and doc["env"]["policy"] == "other"


def test_latency_under_qemu_says_what_ran(cross):
    interval_us, duration_s = 1000, 0.5
    status, doc, err = run(cross, "latency", "--duration-s", str(duration_s), "--interval-us",
                           str(interval_us), "--threads", "1", "--allow-fallback")
    assert status == 0, err
    assert doc["ok"] is True and doc["test"] == "latency"
    env = doc["env"]
    assert env["machine"] == UNAME[cross.arch.name]            # what qemu's uname() says
    assert env["engine_machine"] == ENGINE_MACHINE[cross.arch.name]
    assert env["kernel_machine"] == platform.machine()          # the kernel really running it
    assert env["emulated"] is True
    assert env["policy"] == "other" and env["fallback"] is True
    assert "user-mode emulator" in env["fallback_reason"]
    m = doc["metrics"]
    # every deadline of the run is accounted for, measured or skipped after an overrun
    deadlines = m["cycles"]["value"] + m["skipped"]["value"]
    assert abs(deadlines - duration_s * 1e6 / interval_us) <= 2
    ti = m["ti"]
    # how many were measured rather than skipped depends on how busy the machine is
    # (SCHED_OTHER under an emulator): a loaded CI run saw 69 of 500
    assert ti["count"] == m["cycles"]["value"] > 0
    assert 0 <= ti["min"] <= ti["p50"] <= ti["max"] < duration_s * 1e9
    assert m["dropped"]["value"] == 0


def test_spin_under_qemu_keeps_its_ground_truth(cross):
    busy_us, period_us, duration_s = 2000, 20000, 0.4
    status, doc, err = run(cross, "spin", "--busy-us", str(busy_us), "--period-us", str(period_us),
                           "--duration-s", str(duration_s), "--allow-fallback")
    assert status == 0, err
    events = doc["events"]
    expected = duration_s * 1e6 / period_us
    assert expected - 2 <= len(events) == doc["metrics"]["count"]["value"] <= expected + 1
    lengths = [end - start for start, end in events]
    assert min(lengths) >= busy_us * 1000        # a burst spins at least its busy time
    assert doc["metrics"]["busy"]["min"] == min(lengths)
    # absolute deadlines: burst k starts after run_start + k periods, and no later than the
    # thread's worst wake-up latency (plus its own bookkeeping) after it. A spinner that
    # timed each period from the previous burst would drift: its lateness adds up.
    period_ns, first = period_us * 1000, doc["env"]["run_start_ns"]
    late = [start - (first + k * period_ns) for k, (start, _) in enumerate(events)]
    assert min(late) >= 0
    assert max(late) <= doc["metrics"]["ti"]["max"] + period_ns // 4


def test_overhead_under_qemu_is_plausible(cross):
    status, doc, err = run(cross, "overhead", "--iterations", "100000", "--rounds", "3", "--allow-fallback")
    assert status == 0, err
    cost = doc["metrics"]["timestamp_monotonic"]
    assert 0 < cost["value"] < 100_000, cost   # ns per clock_gettime, emulated


def test_an_unknown_machine_is_refused_in_one_sentence():
    with pytest.raises(UserError, match=r"cannot build an engine for a sparc64 machine.*docs/cross\.md"):
        engines.arch_for_machine("sparc64")
    assert engines.arch_for_machine("armv7l").name == "armhf"
    assert engines.arch_for_machine("arm64").name == "aarch64"


def test_tire_is_deterministic_across_threads_and_solvers_under_qemu(cross):
    """The model's state is bit-identical for any thread count and both solvers on
    one architecture (docs/tire.md); across architectures it need not be: libm's
    cos may differ in the last bit (see docs/cross.md)."""
    base = ["tire", "--mode", "realfast", "--masses", "400", "--steps", "300", "--allow-fallback"]
    sums = set()
    for extra in (["--solver", "locked", "--threads", "1"], ["--solver", "fast", "--threads", "2"]):
        status, doc, err = run(cross, *base, *extra)
        assert status == 0, err
        ph = doc["physics"]
        assert ph["steps_done"] == 300 and ph["nan"] is False and ph["below_floor"] == 0
        assert 0 < ph["energy_j"] < ph["energy_initial_j"]        # damped: energy only leaves
        # symplectic Euler falls g dt^2 k(k+1)/2: the 0.2 m drop is crossed first at k = 20
        assert ph["first_contact_step"] == 20
        sums.add(ph["checksum"])
    assert len(sums) == 1, sums
