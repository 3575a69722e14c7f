"""Engine build variants: a build without the Linux futex leaves the futex out
of the primitives layer, and the tests that need it say so (exit status 2, one
sentence "unavailable in this build because ..."), while the others still run.

The build is the checkout's own (build/engine-nofutex, beside build/engine), made once
and kept: the background pass (the files' objects, the tire team at SCHED_OTHER) builds
it at its start, and the tests that run its primitives at real-time priority (the shared
pass) find it built, ninja's check a no-op, instead of compiling the engine while the
suite waits for that pass. A lock keeps two passes from setting it up at once."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import engine_variant, needs_root


needs_meson = pytest.mark.skipif(not (shutil.which("meson") and shutil.which("ninja")),
                                 reason="needs meson and ninja to build the engine")


@pytest.fixture(scope="module")
def no_futex_build() -> Path:
    # the engine alone: its C unit tests are built and run by scripts/test.sh
    return engine_variant("nofutex", "-Dfutex=disabled", target="src/rtgauge-engine")


def run(engine: Path, *args: str) -> tuple[int, dict, str]:
    p = subprocess.run([str(engine), *args], capture_output=True, text=True, timeout=60)
    return p.returncode, json.loads(p.stdout), p.stderr


@needs_meson
def test_no_futex_build_leaves_the_futex_out(no_futex_build):
    objects = " ".join(str(p.name) for p in (no_futex_build / "src").rglob("*.o"))
    assert "prim_futex" not in objects
    assert "prim.c" in objects


@needs_meson
@needs_root
@pytest.mark.shared
@pytest.mark.parametrize("primitive", ["futex", "mutex"])
def test_variants_that_need_the_futex_say_why(no_futex_build, primitive):
    status, doc, err = run(no_futex_build / "src" / "rtgauge-engine", "shuffle", "--primitive", primitive,
                           "--iterations", "100")
    assert status == 2, err
    assert doc["ok"] is False
    assert "unavailable in this build because" in doc["error"]
    assert "futex" in doc["error"] and doc["error"].endswith(".")
    assert len([line for line in err.splitlines() if line.strip()]) == 1


@needs_meson
@needs_root
@pytest.mark.shared
def test_other_variants_still_run_without_the_futex(no_futex_build):
    engine = no_futex_build / "src" / "rtgauge-engine"
    for primitive in ("sem", "condvar"):
        status, doc, err = run(engine, "shuffle", "--primitive", primitive, "--iterations", "200")
        assert status == 0 and doc["ok"], err
        assert doc["metrics"]["shuffle"]["count"] == 200
    status, doc, err = run(engine, "mutex", "--iterations", "100")
    assert status == 0 and doc["ok"], err
    assert doc["metrics"]["inversions"]["value"] == 0


@needs_meson
def test_tire_team_without_the_futex_computes_the_same_state(no_futex_build, engine_bin):
    """The tire team's barrier falls back on a mutex and condition variable: the
    state after 400 steps on 3 threads is the one the futex build computes."""
    args = ("tire", "--mode", "realfast", "--masses", "2000", "--steps", "400", "--threads", "3",
            "--policy", "other", "--no-mlock")
    sums = []
    for engine in (no_futex_build / "src" / "rtgauge-engine", Path(engine_bin)):
        status, doc, err = run(engine, *args)
        assert status == 0, err
        sums.append(doc["physics"]["checksum"])
    assert sums[0] == sums[1]
    status, doc, err = run(no_futex_build / "src" / "rtgauge-engine", *args[:6], "401", *args[7:])
    assert doc["physics"]["checksum"] != sums[0]
