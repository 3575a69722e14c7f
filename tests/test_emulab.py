"""The emulated lab (docs/lab.md, "An emulated lab"), for real: Debian 12's stock and
PREEMPT_RT kernels for amd64 and armhf, booted under qemu-system (software
emulation) from images rtgauge builds and caches, reached over SSH on loopback, and
measured through rtgauge's public board path: `doctor --target`, `run --target
--tuned`, `rtgauge lab run` of the four into one PostgreSQL database and one report.
No qemu process is left after `stop` (SIGTERM), nor after a SIGKILL of rtgauge.

The first run builds the images (minutes; the cache is ~/.cache/rtgauge/emulab or
$RTGAUGE_EMULAB_CACHE); later runs reuse them. Marked `emulab` so the suite can
budget them (`-m "not emulab"` leaves them out)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from readiness import tcp_listening, wait_for

REPO = Path(__file__).resolve().parent.parent
SYSTEMS = ["amd64", "amd64-rt", "armhf", "armhf-rt"]
UNAME = {"amd64": "x86_64", "armhf": "armv7l"}

pytestmark = [pytest.mark.emulab,
              pytest.mark.skipif(os.geteuid() != 0, reason="building the images needs root (mmdebstrap)")]

# Short, for systems under TCG (tens of times slower than a board, one virtual CPU):
# every kind of job the board path runs, each as small as still measures something.
PROFILE = """\
name = "emulated-short"
[settings]
warmup_s = 0.0

[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle", "cpu"]
cross_check = ["cyclictest", "rtla"]
[jobs.options]
duration-s = 1
interval-us = 1000
priority = 80

[[jobs]]
name = "timestamp-cost"
test = "overhead"
[jobs.options]
iterations = 2000
rounds = 3

[[jobs]]
name = "switch-2"
test = "switch"
[jobs.options]
threads = 2
iterations = 200

[[jobs]]
name = "tire-8"
test = "tire"
[jobs.options]
masses = 8
steps = 20
period-ms = 10
"""


# --tuned proves the tuning applied there and put back; the jobs themselves are proven on
# every system by the lab run below, so one short latency job is enough here
TUNED_PROFILE = """\
name = "emulated-tuned"
[settings]
warmup_s = 0.0

[[jobs]]
name = "latency"
test = "latency"
[jobs.options]
duration-s = 1
interval-us = 1000
priority = 80
"""


def rtgauge(*args, env=None, timeout=900, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout, **kw)


def qemu_pids() -> dict[int, str]:
    out = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].startswith(b"qemu-system-"):
            out[int(d.name)] = b" ".join(cmd).decode(errors="replace")
    return out


def ours(state: Path) -> dict[int, str]:
    """The qemu processes whose console goes into `state` (this test's lab)."""
    return {p: c for p, c in qemu_pids().items() if f"file:{state}/" in c}


def listeners(port: int) -> list[tuple[int | None, str]]:
    """Who listens on the port here: (pid, command line) a listening socket, from
    /proc/net/tcp[6] (its inode) and /proc/PID/fd (who holds that inode); pid None when
    no process of this namespace holds it."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in f.read().splitlines()[1:]:
                cols = row.split()
                if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:     # LISTEN
                    inodes.add(cols[9])
    found = {}
    # every thread's files: the main thread of a process still exiting has none of its own
    for d in Path("/proc").glob("[0-9]*/task/[0-9]*") if inodes else ():
        try:
            for fd in (d / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    pid = int(d.parent.parent.name)
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    found[link[8:-1]] = (pid, cmd.strip() or f"(exiting; thread {d.name})")
        except OSError:
            continue
    return [found.get(i, (None, f"socket inode {i}, no process holds it")) for i in sorted(inodes)]


def no_port_of_ours(ports, state: Path) -> None:
    """None of the lab's forwarded ports is still listening for us. A port that answers
    is identified: our qemu (its console in `state`) or our rtgauge is a leftover and
    fails the test; another program that took the freed port since (ports are reused;
    others' tests listen on loopback) is said, not blamed on us."""
    for port in ports:
        for pid, cmd in listeners(port):
            # unidentified, or a process exiting (its command line already empty): not
            # cleared as another program's
            ours_ = pid is None or "(exiting" in cmd or f"file:{state}/" in cmd or str(state) in cmd
            assert not ours_, f"port {port} is still ours after stop: process {pid}: {cmd}"
            print(f"port {port} was freed and is now another program's: process {pid}: {cmd[:200]}")


def exited(pid: int) -> bool:
    """The process has finished exiting: no /proc entry, or every thread of it a zombie
    (its files, the forwarded port's socket among them, are closed by then). Neither its
    command line nor its main thread says as much: the command line reads empty once the
    process has released its memory, and the main thread of a multi-threaded qemu is a
    zombie while its other threads still exit, holding its files (the port still
    listening: seen as "a port that answered after its qemu was gone")."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True
    for t in tasks:
        try:
            stat = (t / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] not in "ZX":
            return False
    return True


def wait_gone(state: Path, pids, seconds: float) -> dict[int, str]:
    """The qemu processes of `state`, and those of `pids`, that are still there after at
    most `seconds`."""
    end = time.monotonic() + seconds
    while (ours(state) or not all(exited(p) for p in pids)) and time.monotonic() < end:
        time.sleep(0.2)
    return {**ours(state), **{p: "(exiting)" for p in pids if not exited(p)}}


@pytest.fixture(scope="session")
def built():
    """The four systems' images, built by `rtgauge lab emulate build` (or found in the cache)."""
    started = time.monotonic()
    p = rtgauge("lab", "emulate", "build", timeout=3000)
    assert p.returncode == 0, p.stdout + p.stderr
    for s in SYSTEMS:
        assert re.search(rf"^{s}: Linux 6\.\S+{'-rt-' if s.endswith('-rt') else '-'}", p.stdout, re.M), p.stdout
    return time.monotonic() - started


def scratch(prefix: str) -> Path:
    """A directory of this test run's own under the build directory: on a machine shared
    with other sessions, /tmp's rtgauge-* names and pytest's numbered temporary
    directories (it keeps the last three of a user's) were seen removed mid-run by
    others, taking the lab's state (pid file, consoles) with them."""
    base = REPO / "build" / "emulab-tests"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


@pytest.fixture(scope="module")
def lab(built):
    """The four systems up under `rtgauge lab emulate start`, stopped by `rtgauge lab emulate stop`."""
    state = scratch("lab-")
    proc = subprocess.Popen([sys.executable, "-m", "rtgauge", "lab", "emulate", "start", "--state", str(state),
                             "--time-limit", "3600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, start_new_session=True)
    lines, pids, ports = [], {}, {}
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Up in"):
                break
        assert proc.poll() is None, "".join(lines) + proc.stderr.read()
        ports = {m[0]: int(m[1]) for m in re.findall(r"^\s+emu-(\S+): ssh://\S+ \(127\.0\.0\.1:(\d+)\)",
                                                           "".join(lines), re.M)}
        assert sorted(ports) == sorted(SYSTEMS), "".join(lines)
        pids = ours(state)
        assert len(pids) == 4
        env = dict(os.environ, RTGAUGE_SSH_CONFIG=str(state / "ssh_config"), RTGAUGE_TARGET_PATIENCE="10")
        env.pop("SSH_AUTH_SOCK", None)
        yield {"state": state, "env": env, "ports": ports, "proc": proc, "pids": pids}
    finally:
        stopped = None
        if proc.poll() is None:
            p = rtgauge("lab", "emulate", "stop", "--state", str(state), timeout=120)
            stopped = p.stdout + p.stderr
            print(p.stdout.strip())          # how long the stop took
            if p.returncode != 0 or "Stopped the emulated lab" not in p.stdout:
                proc.terminate()             # whatever happened, nothing of ours stays up
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out = proc.stdout.read()
        left = wait_gone(state, pids, 30)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert stopped is None or "Stopped the emulated lab" in stopped, stopped
        assert not left, f"qemu left after stop: {left}"
        assert proc.returncode == 130 and "every emulated system is powered off" in out, out
        assert not (state / "ssh_config").exists()
        no_port_of_ours(ports.values(), state)
        import shutil
        shutil.rmtree(state, ignore_errors=True)


def ssh(lab, system: str, command: str) -> str:
    p = subprocess.run(["ssh", "-F", str(lab["state"] / "ssh_config"), "-o", "BatchMode=yes", f"emu-{system}",
                        command], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_doctor_sees_each_kernel_its_architecture_and_the_emulation(lab):
    doctors = {s: subprocess.Popen([sys.executable, "-m", "rtgauge", "doctor", "--target", f"ssh://emu-{s}", "--json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=lab["env"])
               for s in SYSTEMS}       # the four at once: each mostly waits for its system
    done = {s: d.communicate(timeout=600) for s, d in doctors.items()}
    for s in SYSTEMS:
        out, err = done[s]
        assert doctors[s].returncode == 0, err
        p = subprocess.CompletedProcess([], 0, out, err)
        facts = json.loads(p.stdout)["facts"]
        rt = s.endswith("-rt")
        assert facts["realtime"] is rt, (s, facts["realtime"], facts["preempt_model"])
        assert (facts["preempt_model"] == "PREEMPT_RT") is rt, (s, facts["preempt_model"])
        assert facts["arch"] == UNAME[s.split("-")[0]]
        assert facts["hostname"] == f"emu-{s}"
        assert ("-rt-" in facts["kernel_release"]) is rt
        assert facts["kernel_release"] == ssh(lab, s, "uname -r").strip()
        virt = facts["virtualization"]
        assert virt["vm"] and virt["emulated"] is True and virt["kind"] == "qemu-tcg" and facts["emulated"] is True
        # detected from the machine itself too, not only from the lab's word on the command line
        seen = " ".join(virt["evidence"])
        assert ("DMI: QEMU" in seen) if s.startswith("amd64") else ("device tree: linux,dummy-virt" in seen), seen
        # Debian's RT kernels carry the timerlat tracer, its stock kernels do not
        assert facts["timerlat_available"] is rt, (s, facts.get("tracers_source"))
        [check] = [c for c in json.loads(p.stdout)["checks"] if c["name"] == "virtualization"]
        assert check["status"] == "warn" and "full-system emulation" in check["value"]


TUNABLE = ("/sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag "
           "/proc/irq/default_smp_affinity /proc/irq/*/smp_affinity_list")


def tunables(lab, system: str) -> str:
    return ssh(lab, system, f"for f in {TUNABLE}; do [ -f $f ] && printf '%s=' $f && cat $f; done")


# the stock kernel: it has transparent hugepages to tune (Debian's RT kernels do not, and on
# one CPU no interrupt can move), so the tuning changes something to put back
@pytest.mark.parametrize("system", ["amd64"])
def test_run_tuned_on_a_board_measures_there_and_puts_the_tuning_back(lab, system, tmp_path):
    (tmp_path / "p.toml").write_text(TUNED_PROFILE)
    before = tunables(lab, system)
    db = tmp_path / "r.db"
    p = rtgauge("run", "--no-report", "--profile", str(tmp_path / "p.toml"), "--target", f"ssh://emu-{system}",
                "--tuned", "--db", str(db), env=lab["env"], timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "emulated (qemu-tcg): timings not meaningful for hardware" in p.stdout
    assert tunables(lab, system) == before                       # put back byte for byte
    assert "/run/rtgauge/target-tune" not in ssh(lab, system, "ls -d /run/rtgauge/* 2>/dev/null; true")
    from rtgauge.store import open_store
    with open_store(str(db)) as store:
        [row] = store.list_runs()
        run = store.get_run(row["id"]).to_dict()
    assert run["status"] == "complete" and run["hostname"] == f"emu-{system}"
    facts = run["system"]
    assert facts["emulated"] is True and facts["arch"] == UNAME[system.split("-")[0]]
    assert facts["realtime"] is system.endswith("-rt")
    by = {(m["name"], m["tool"]): m for m in run["measurements"]}
    assert list(by) == [("latency@idle", "engine")]
    m = by[("latency@idle", "engine")]
    assert m["ok"], (m.get("error"), m.get("load"))
    assert m["document"]["env"]["hostname"] == f"emu-{system}"     # the engine's document names its system
    changed = by[("latency@idle", "engine")]["load"]["tuned"]["changed"]
    assert changed and all(path.startswith(("/proc/irq/", "/sys/")) for path, *_ in changed), changed
    lat = by[("latency@idle", "engine")]["document"]
    assert lat["env"]["machine"] == UNAME[system.split("-")[0]]
    assert lat["env"]["policy"] == "fifo"                        # real-time scheduling there, no fallback


def test_lab_run_of_the_four_gives_one_report_side_by_side(lab, postgres_server, tmp_path):
    (tmp_path / "p.toml").write_text(PROFILE)
    db = postgres_server.new_database()
    (tmp_path / "lab.toml").write_text(f'name = "emulated"\nprofile = "p.toml"\ndb = "{db}"\n'
                                       f'targets = [{", ".join(json.dumps("ssh://emu-" + s) for s in SYSTEMS)}]\n')
    report = tmp_path / "lab.html"
    p = rtgauge("lab", "run", str(tmp_path / "lab.toml"), "--report", str(report), "--logs", str(tmp_path / "logs"),
                env=lab["env"], timeout=2400)
    assert p.returncode == 0, p.stdout + p.stderr
    from rtgauge.store import open_store
    with open_store(db) as store:
        runs = [store.get_run(r["id"]).to_dict() for r in store.list_runs()]
    assert sorted(r["hostname"] for r in runs) == sorted(f"emu-{s}" for s in SYSTEMS)
    assert all(r["status"] == "complete" and r["system"]["emulated"] is True for r in runs)
    assert {r["hostname"]: r["system"]["realtime"] for r in runs} == {f"emu-{s}": s.endswith("-rt") for s in SYSTEMS}
    assert {r["hostname"]: r["system"]["arch"] for r in runs} == {f"emu-{s}": UNAME[s.split("-")[0]] for s in SYSTEMS}
    for r in runs:       # every job measured on every system, the cpu load running on the board throughout
        got = {(m["name"], m["tool"]): m for m in r["measurements"]}
        rt = r["system"]["realtime"]
        assert len(got) == (9 if rt else 7) and all(m["ok"] for m in got.values()), \
            (r["hostname"], [(k, m.get("error"), m.get("load")) for k, m in got.items() if not m["ok"]])
        assert got[("latency@cpu", "engine")]["document"]["env"]["hostname"] == r["hostname"]
        notes = got[("latency@idle", "engine")]["document"]["env"].get("notes", [])
        if not rt:       # Debian's stock kernels have no timerlat tracer: said, not hidden
            assert any("no timerlat tracer" in n and "rtla timerlat cross-check was not run" in n for n in notes), notes
            continue
        for condition in ("idle", "cpu"):     # the kernel's own split, from rtla timerlat on the board
            metrics = got[(f"latency@{condition}/rtla", "rtla")]["document"]["metrics"]
            thread, irq = metrics["timerlat_thread"], metrics["timerlat_irq"]
            # (an IRQ whose thread had not yet run when rtla stopped is counted in one only)
            assert thread["count"] > 0 and abs(thread["count"] - irq["count"]) <= 2, (thread["count"], irq["count"])
            # each cycle's thread wakes after its timer's IRQ: the thread's worst case is the larger
            assert thread["max"] >= irq["max"] > 0 and thread["min"] >= irq["min"], (thread, irq)
            ours = got[(f"latency@{condition}", "engine")]["document"]["metrics"]["ti"]
            print(f"{r['hostname']} {condition}: rtla timerlat IRQ max {irq['max'] / 1e3:.1f} µs, thread max "
                  f"{thread['max'] / 1e3:.1f} µs ({thread['count']} cycles); rtgauge ti max {ours['max'] / 1e3:.1f} µs")
    html = report.read_text()
    for s in SYSTEMS:
        assert f"emu-{s}" in html
    assert html.count("emulated (qemu-tcg): timings not meaningful for hardware") >= 4
    assert html.count("rtgauge vs rtla") >= 4        # both conditions, on each RT kernel


def test_a_killed_rtgauge_leaves_no_qemu_and_no_port(built):
    """SIGKILL of `rtgauge lab emulate start` while the systems boot: the kernel kills
    their qemu processes (PR_SET_PDEATHSIG), their forwarded ports close."""
    state = scratch("killed-") / "state"
    proc = subprocess.Popen([sys.executable, "-m", "rtgauge", "lab", "emulate", "start", "armhf-rt", "amd64",
                             "--state", str(state), "--time-limit", "600"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=REPO, start_new_session=True)
    try:
        pids = wait_for(lambda: (lambda o: o if len(o) == 2 else None)(ours(state)), "the two systems' qemu",
                        timeout=120, proc=proc)
        ports = [int(m) for c in pids.values() for m in re.findall(r"hostfwd=tcp:127\.0\.0\.1:(\d+)-", c)]
        assert len(ports) == 2, pids
        # killed while they boot, once each qemu listens on its forwarded port (what must close)
        wait_for(lambda: all(any(tcp_listening(port, pid) for pid in pids) for port in ports),
                 f"qemu listening on the forwarded ports {ports}", timeout=120, proc=proc)
        proc.kill()
        proc.wait(10)
        left = wait_gone(state, pids, 30)
        assert not left, f"qemu outlived its rtgauge: {left}"
        no_port_of_ours(ports, state)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in ours(state):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        import shutil
        shutil.rmtree(state.parent, ignore_errors=True)
