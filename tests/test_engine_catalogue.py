"""`rtgauge-engine --list --json`, the catalogue the orchestrator reads (docs/engine.md):
valid and complete against what the engine really does — every test it lists, every
option --help shows with the range and choices the parser enforces and the defaults
--dry-run records, every metric a real run emits, the availability hook seen failing
when the system really denies UDP sockets — and rtgauge.catalogue's cache and the
profile validation built on it."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import re
import shutil
import socket
import subprocess

import pytest

from conftest import needs_root
from rtgauge.catalogue import catalogue
from rtgauge.errors import UserError

KINDS = {"latency", "micro-performance", "micro-behaviour", "application", "loop", "instrument"}
SHAPES = {"distribution": {"count", "histogram"}, "series": {"window_ns", "max"}, "scalar": {"value"}}


def listing(engine_bin: str) -> dict:
    p = subprocess.run([engine_bin, "--list", "--json"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("\n") == 1            # one document, one line
    return json.loads(p.stdout)


def dry_run(engine_bin: str, test: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([engine_bin, test, "--dry-run", *args], capture_output=True, text=True, timeout=30)


def help_options(engine_bin: str, test: str) -> dict[str, str]:
    """name -> the rest of its --help line."""
    text = subprocess.run([engine_bin, test, "--help"], capture_output=True, text=True, check=True).stdout
    return dict(re.findall(r"^  --([a-z0-9-]+) (.*)$", text, re.M))


def test_every_listed_test_is_described(engine_bin):
    doc = listing(engine_bin)
    assert doc["schema"] == 1 and set(doc["kinds"]) == KINDS
    assert "#i" in doc["per_thread"]
    plain = subprocess.run([engine_bin, "--list"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert [t["name"] for t in doc["tests"]] == [line.split()[0] for line in plain]
    for t, line in zip(doc["tests"], plain):
        assert t["kind"] in KINDS and line.split()[1] == t["kind"]
        assert t["summary"] and t["summary"] in line and "\n" not in t["summary"]
        a = t["availability"]
        assert isinstance(a["available"], bool) and (a["reason"] is None) == a["available"]
        assert t["metrics"], f"{t['name']} declares no metric"
        for m in t["metrics"]:
            assert m["kind"] in SHAPES and m["unit"] and m["help"], (t["name"], m)
            assert isinstance(m["per_thread"], bool) and isinstance(m["conditional"], bool)
        assert len({m["name"] for m in t["metrics"]}) == len(t["metrics"]), t["name"]
    kinds = {t["name"]: t["kind"] for t in doc["tests"]}
    assert kinds["latency"] == "latency" and kinds["switch"] == "micro-performance"
    assert kinds["pi"] == "micro-behaviour" and kinds["tire"] == "application" and kinds["hil"] == "loop"


def test_options_are_those_help_shows_with_what_the_parser_enforces(engine_bin):
    for t in listing(engine_bin)["tests"]:
        name = t["name"]
        shown = help_options(engine_bin, name)
        assert [o["name"] for o in t["options"]] == list(shown), name
        defaults = dry_run(engine_bin, name)
        assert defaults.returncode == 0, defaults.stderr
        params = json.loads(defaults.stdout)["params"]
        for o in t["options"]:
            opt, line = f"--{o['name']}", shown[o["name"]]
            assert o["help"] and o["help"] in line, (name, opt)
            assert params[o["name"].replace("-", "_")] == o["default"], (name, opt)
            if o["type"] in ("int", "num"):
                assert f"range {_fmt(o['min'])}..{_fmt(o['max'])}" in line, (name, opt, line)
                for ok in (o["min"], o["max"]):
                    assert dry_run(engine_bin, name, opt, str(ok)).returncode == 0, (name, opt, ok)
                step = max(1, abs(o["max"]) // 1000)         # beyond a double's rounding of a large bound
                above = o["max"] + step if o["type"] == "int" else o["max"] * 2 + 1
                below = o["min"] - 1 if o["type"] == "int" else o["min"] - abs(o["min"]) - 1
                for bad in (above, below):
                    r = dry_run(engine_bin, name, opt, str(bad))
                    assert r.returncode == 2 and "out of range" in r.stderr, (name, opt, bad, r.stderr)
            elif o["type"] == "choice":
                assert f"one of {'|'.join(o['choices'])}" in line, (name, opt)
                for c in o["choices"]:
                    assert dry_run(engine_bin, name, opt, c).returncode == 0, (name, opt, c)
                assert dry_run(engine_bin, name, opt, "no-such-choice").returncode == 2, (name, opt)
            else:
                assert o["min"] is None and o["max"] is None and o["choices"] is None, (name, opt)
            assert (o["type"] == "flag") == (o["default"] is False), (name, opt)


def test_cpus_is_declared_exactly_where_the_engine_takes_it(engine_bin):
    """What plan/execute reads instead of scraping --help: a dry run with --cpus is
    accepted exactly by the tests whose catalogue entry lists it."""
    cpu = str(min(os.sched_getaffinity(0)))
    takes = {}
    for t in listing(engine_bin)["tests"]:
        declared = any(o["name"] == "cpus" for o in t["options"])
        r = dry_run(engine_bin, t["name"], "--cpus", cpu)
        assert (r.returncode == 0) == declared, (t["name"], r.stderr)
        takes[t["name"]] = declared
    assert takes["latency"] and not takes["spin"]       # spin has its own --cpu


# Cheap real runs; every metric they emit must be declared, with its unit and shape,
# and every metric not marked conditional must be emitted.
RUNS = {
    "latency": ["--duration-s", "0.2", "--threads", "2"],
    "overhead": ["--iterations", "20000", "--rounds", "3"],
    "spin": ["--duration-s", "0.2", "--busy-us", "200", "--period-us", "20000"],
    "switch": ["--iterations", "200"],
    "tick": ["--duration-s", "0.05"],
    "thr-rr": ["--duration-s", "0.4"],
    "tire": ["--mode", "realfast", "--steps", "20", "--masses", "400"],
    "hil": ["--frames", "200", "--period-us", "1000"],
}


@needs_root
@pytest.mark.parametrize("test", sorted(RUNS))
@pytest.mark.shared
def test_emitted_metrics_are_declared(engine_bin, test):
    info = {t["name"]: t for t in listing(engine_bin)["tests"]}[test]
    declared = {m["name"]: m for m in info["metrics"]}
    p = subprocess.run([engine_bin, test, *RUNS[test]], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    emitted = json.loads(p.stdout)["metrics"]
    for key, value in emitted.items():
        base, per_thread, _ = key.partition("#")
        m = declared.get(base)
        assert m, f"{test} emits {key}, not declared"
        assert not per_thread or m["per_thread"], f"{test} emits {key}, {base} is not declared per thread"
        assert value["unit"] == m["unit"], (test, key)
        assert SHAPES[m["kind"]] <= set(value), (test, key, m["kind"])
    for name, m in declared.items():
        if not m["conditional"]:
            assert name in emitted, f"{test} declares {name} as always emitted; the run did not emit it"


# -- availability: UDP sockets denied for real (seccomp, as a sandbox would) ------------

def deny_inet_sockets() -> None:
    """preexec_fn: socket(AF_INET, ...) fails with EAFNOSUPPORT in the child, through a
    seccomp filter (libseccomp), as systemd's RestrictAddressFamilies= would do."""
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)

    class Cmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]

    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(Cmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(0x7FFF0000)                                  # SCMP_ACT_ALLOW
    nr = lib.seccomp_syscall_resolve_name(b"socket")
    cmp = Cmp(0, 4, socket.AF_INET, 0)                                  # arg0 == AF_INET (SCMP_CMP_EQ)
    if lib.seccomp_rule_add_array(ctx, 0x00050000 | errno.EAFNOSUPPORT, nr, 1, ctypes.byref(cmp)) != 0:
        raise OSError("seccomp_rule_add_array failed")
    if lib.seccomp_load(ctx) != 0:
        raise OSError("seccomp_load failed")


needs_seccomp = pytest.mark.skipif(not (ctypes.util.find_library("seccomp") or os.path.exists(
    "/usr/lib/x86_64-linux-gnu/libseccomp.so.2")),
    reason="libseccomp is not installed (scripts/setup.sh --all installs it)")


@needs_seccomp
def test_hil_is_unavailable_without_udp_and_says_why(engine_bin):
    p = subprocess.run([engine_bin, "--list", "--json"], capture_output=True, text=True, timeout=30,
                       preexec_fn=deny_inet_sockets)
    tests = {t["name"]: t for t in json.loads(p.stdout)["tests"]}
    a = tests["hil"]["availability"]
    assert a["available"] is False
    assert a["reason"].startswith("unavailable here because no UDP socket can be opened")
    assert "not supported" in a["reason"]                                # the errno's text
    assert tests["latency"]["availability"]["available"] is True
    plain = subprocess.run([engine_bin, "--list"], capture_output=True, text=True, preexec_fn=deny_inet_sockets)
    assert "(unavailable here because" in next(l for l in plain.stdout.splitlines() if l.startswith("hil "))
    for args in (["hil", "--dry-run"], ["hil", "--frames", "10"]):
        r = subprocess.run([engine_bin, *args], capture_output=True, text=True, timeout=30,
                           preexec_fn=deny_inet_sockets)
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "the hil test is unavailable here because no UDP socket" in lines[0]
        doc = json.loads(r.stdout)
        assert doc["ok"] is False and doc["error"] in lines[0] and "metrics" not in doc
    # and without the filter it is available again
    assert {t["name"]: t for t in listing(engine_bin)["tests"]}["hil"]["availability"]["available"] is True


# -- rtgauge.catalogue ------------------------------------------------------------------

def test_catalogue_is_cached_per_binary(engine_bin, tmp_path, monkeypatch):
    """Asked once per binary: a second process reads the disk cache (shown by an engine
    that can no longer run), and a changed binary is asked again."""
    import rtgauge.catalogue as cat_mod

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    exe = tmp_path / "rtgauge-engine"
    shutil.copy2(engine_bin, exe)
    first = catalogue(str(exe))
    assert list(first.tests) == [t["name"] for t in listing(engine_bin)["tests"]]
    assert len(list((tmp_path / "cache" / "rtgauge").glob("catalogue-*.json"))) == 1
    assert catalogue(str(exe)) is first                              # memory
    monkeypatch.setattr(cat_mod, "_memory", {})
    exe.chmod(0o644)                                                 # cannot run: only the cache can answer
    st = exe.stat()
    os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert catalogue(str(exe)).tests.keys() == first.tests.keys()
    os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))   # "rebuilt": asked again
    with pytest.raises(UserError, match="could not list its tests"):
        catalogue(str(exe))
    assert catalogue(engine_bin).test("latency").takes_cpus


def test_unknown_test_lists_the_known_ones(engine_bin):
    with pytest.raises(UserError) as e:
        catalogue(engine_bin).test("latncy", "profile p, job 1")
    msg = str(e.value)
    assert msg.startswith("profile p, job 1: unknown test 'latncy'; the engine's tests are latency, ")
    assert all(name in msg for name in catalogue(engine_bin).tests) and "\n" not in msg


def _fmt(v) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:g}"
