"""Shared fixtures: the engine binary under test and a way to run it."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The checkout's rtgauge, also where an older copy is installed in the environment
# (`.venv/bin/pytest` puts tests/ first on sys.path, not the checkout; `python -m pytest`
# puts the working directory): the tests, and the commands run in this process
# (tests/inproc.py), import the code under test.
if str(ROOT) not in sys.path[:2]:
    sys.path.insert(0, str(ROOT))

from rtgauge.enginebin import engine_path  # noqa: E402
from pgserver import postgres_server  # noqa: E402,F401  (one server for the session)

# Nothing from earlier work on the machine: the suite's rtgauge processes keep their
# default database (and anything else under $XDG_DATA_HOME/rtgauge) in a directory
# of this session, not in ~/.local/share/rtgauge, which they would otherwise read and
# write. Caches stay where they are: each entry is keyed by what it was made from
# (the engine catalogue by the engine's path, mtime and size; cross-built engines by
# source hash and compiler), so a leftover one is never used for something else, and
# a fresh machine only pays for building them. Set before any test runs;
# pytest-xdist workers inherit it.
_OWN_XDG = None
if not os.environ.get("RTGAUGE_TEST_XDG"):
    _OWN_XDG = tempfile.mkdtemp(prefix="rtgauge-tests-xdg-")
    os.environ.update(RTGAUGE_TEST_XDG=_OWN_XDG, XDG_DATA_HOME=os.path.join(_OWN_XDG, "data"))


def pytest_unconfigure(config):
    if _OWN_XDG:
        shutil.rmtree(_OWN_XDG, ignore_errors=True)


# The command line is tested in this process: rtgauge() and cli() call rtgauge.cli.main
# with the caller's environment, working directory and stdin, and capture descriptors 1
# and 2 (tests/inproc.py says what a call gets and what is put back after it). What
# only a process of its own can show runs as one, a new interpreter each time (the
# black-box table); RTGAUGE_TEST_BLACK_BOX=1 runs every call so, to tell a difference
# of the two ways apart from a fault of the command.
BLACK_BOX = (
    ("rtgauge_popen()", "the test acts on the command while it runs: SIGINT, SIGTERM, SIGHUP or SIGKILL "
                        "sent to it, a second command beside it, what its children do when it dies"),
    ("rtgauge(..., fresh=True)", "what the interpreter's own start-up does"),
    ("rtgauge(..., preexec_fn=)", "the process is set up before it starts (signal dispositions, limits)"),
    ("rtgauge('engine', ...)", "the pass-through execs the engine, which would replace the test process"),
    ("tests/test_cli_pipe.py", "exit statuses through a pipe its reader closed (141, SIGPIPE) and a full "
                               "device: the process's own descriptors"),
    ("tests/test_cli_startup.py", "which modules a new interpreter imports for --help, and how long it takes"),
    ("tests/attack/test_signals.py, tests/test_run.py (SIGTERM)", "signals to a running command and its engine"),
    ("tests/attack/test_writers.py, test_bounds_and_strict.py", "stdout on /dev/full, stdin from /dev/zero: "
                                                                 "descriptors the test opens itself"),
    ("tests/test_engine_summary.py", "a pseudo-terminal as stdout"),
    ("tests/test_cli_help.py", "strace of the whole process tree"),
    ("tests/test_cyclictest_files.py rtgauge_peak", "the peak resident memory of the process"),
    ("tests/test_privilege.py", "the command without privileges (capabilities dropped before exec)"),
    ("without_tracefs() (test_loads, test_study_profiles)", "a private mount namespace (unshare)"),
    ("tests/test_lab.py, test_emulab*.py, test_hil_command.py, test_target_ssh.py, test_idle_load.py",
     "whole runs as a user starts them, several at once, or the `python -m rtgauge.hil` entry point"),
)


def _black_box(args, kw) -> bool:
    return bool(kw.get("fresh") or "preexec_fn" in kw or args[:1] == ("engine",)
                or os.environ.get("RTGAUGE_TEST_BLACK_BOX"))


def rtgauge(*args: str, timeout: float = 300, env: dict | None = None, cwd: Path | str = ROOT,
            fresh: bool = False, env_full: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """`python -m rtgauge ARGS` as a user runs it, from this source tree (PYTHONPATH; in the
    repository unless cwd says otherwise); env: variables added to ours; kw: input,
    errors (as subprocess.run takes them), preexec_fn. The timeout is a watchdog, not a
    speed. Runs in this process (tests/inproc.py) unless BLACK_BOX above says it needs a
    process of its own: fresh=True, preexec_fn, `engine`. env_full: the whole
    environment instead."""
    full = env_full if env_full is not None else dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    if _black_box(args, dict(kw, fresh=fresh)):
        return subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True,
                              timeout=timeout, env=full, cwd=cwd, **kw)
    import inproc
    return inproc.run(list(args), env=full, cwd=cwd, timeout=timeout, **kw)


def rtgauge_popen(*args: str, env_full: dict, cwd: Path | str = ROOT) -> subprocess.Popen:
    """subprocess.Popen([python, "-m", "rtgauge", *args], stdout=PIPE, stderr=PIPE,
    text=True, env=env_full, cwd=cwd): a process of its own (BLACK_BOX), stdin from
    /dev/null, with SIGINT and SIGHUP at their defaults as a terminal's command has them
    (a runner under nohup, or a shell's background job, hands them ignored, and the
    tests that send them would then see nothing happen)."""
    return subprocess.Popen([sys.executable, "-m", "rtgauge", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_full, cwd=cwd,
                            preexec_fn=_default_stop_signals)


def _default_stop_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def cli(argv: list, *, env: dict | None = None, cwd: Path | str | None = None, timeout: float = 300,
        check: bool = False, **kw) -> subprocess.CompletedProcess:
    """subprocess.run([python, "-m", "rtgauge", *argv], capture_output=True, text=True, env=,
    cwd=, timeout=, check=) with the same meaning of each argument, through rtgauge()."""
    p = rtgauge(*map(str, argv), env_full=dict(os.environ) if env is None else env,
                cwd=os.getcwd() if cwd is None else cwd, timeout=timeout, **kw)
    if check:
        p.check_returncode()
    return p


def one_sentence(p: subprocess.CompletedProcess, status: int = 2) -> str:
    """P's stderr, after asserting that bad input was refused as the house wants it: exit
    STATUS, one line on stderr, no traceback."""
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == status, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr


def import_engine_latency(engine_bin: str, doc: Path, db: Path) -> Path:
    """A real engine latency document of 0.3 s (SCHED_OTHER: no privilege needed) written
    to DOC and imported into DB (created, or one more run); DOC returned. The timeouts
    are watchdogs for a loaded machine, not speeds."""
    subprocess.run([engine_bin, "latency", "--duration-s", "0.3", "--policy", "other", "--out", str(doc)],
                   check=True, capture_output=True, timeout=120)
    p = rtgauge("import", str(doc), "--db", str(db), timeout=900)
    assert p.returncode == 0, p.stderr
    return doc


@dataclass
class EngineResult:
    status: int
    doc: dict | None
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def engine_bin() -> str:
    """$RTGAUGE_ENGINE (the test command sets it to the Meson build) or the packaged one."""
    return engine_path()


@pytest.fixture(scope="session")
def run_engine(engine_bin):
    """run_engine("latency", "--duration-s", "1", timeout=30) -> EngineResult"""

    def run(*args: str, timeout: float = 60, check_json: bool = True) -> EngineResult:
        p = subprocess.run([engine_bin, *args], capture_output=True, text=True, timeout=timeout)
        doc = None
        if p.stdout.strip():
            doc = json.loads(p.stdout)
        elif check_json:
            raise AssertionError(f"engine printed no JSON (status {p.returncode}): {p.stderr}")
        return EngineResult(p.returncode, doc, p.stdout, p.stderr)

    return run


def engine_variant(name: str, *options: str, target: str | None = None) -> Path:
    """An engine built with meson OPTIONS in the checkout's own build/engine-NAME, beside
    build/engine: kept between runs (ninja rebuilds what changed) and gone with the clone.
    A lock keeps two passes from setting it up at once (scripts/test.sh builds the no-futex
    one beside the alone pass). TARGET: one ninja target, or everything."""
    build = ROOT / "build" / f"engine-{name}"
    build.parent.mkdir(parents=True, exist_ok=True)
    with open(build.with_name(build.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # another pass building it: wait for it
        if not (build / "build.ninja").exists():
            shutil.rmtree(build, ignore_errors=True)
            p = subprocess.run(["meson", "setup", str(build), str(ROOT / "engine"), *options],
                               capture_output=True, text=True)
            assert p.returncode == 0, p.stdout + p.stderr
        p = subprocess.run(["ninja", "-C", str(build), *([target] if target else [])], capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
    return build


def is_root() -> bool:
    return os.geteuid() == 0


needs_root = pytest.mark.skipif(not is_root(), reason="needs root for SCHED_FIFO and mlockall")


def tracefs_in_kernel() -> bool:
    try:
        with open("/proc/filesystems") as f:
            return any(line.split()[-1] == "tracefs" for line in f if line.strip())
    except OSError:
        return False


# A machine in its fresh state has no tracefs mounted; the suite must not depend on
# a mount left by earlier work, nor change the host's mounts to show that path. This
# runs CMD in a private mount namespace (`unshare -m`) where every tracefs mount of
# the host is lazily unmounted first: what CMD mounts there vanishes with it, and
# other users of the machine see nothing.
UNMOUNT_TRACEFS = ('for m in $(awk \'$3 == "tracefs" {print $2}\' /proc/self/mounts | sort -r); do '
                   'umount -l "$m" || exit 97; done; exec "$@"')

needs_mount_namespace = pytest.mark.skipif(
    not is_root() or not tracefs_in_kernel() or subprocess.run(["sh", "-c", "command -v unshare"],
                                                                capture_output=True).returncode != 0,
    reason="needs root, unshare(1) and a kernel with tracefs")


def without_tracefs(cmd: list[str]) -> list[str]:
    """CMD as run on a machine where tracefs is not mounted (see UNMOUNT_TRACEFS)."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", UNMOUNT_TRACEFS, "sh", *cmd]


# scripts/test.sh runs the suite in four passes (PASSES), chosen with --pass.
# Each test file declares its pass itself (`pytestmark = pytest.mark.alone` or
# `pytest.mark.shared` at the top of the file; a single test's mark does the same for it);
# a file that declares none is in the background pass. The passes:
# - alone: the tests marked `alone`, one after another.
#   Their claims are about a measured CPU free of the suite's own real-time work
#   (ground truth against a FIFO spinner, host stalls, A/B statistics, cyclictest
#   cross-checks), or they start such work themselves, or they change machine-wide state
#   (tuning, cpusets, RT throttling, the tune state file). The loads' tests are here too:
#   they ask each load for a floor of CPU time, which another test's load takes from them.
# - shared: the tests marked `shared`, on four pytest-xdist
#   workers, after the alone pass. They start real-time work (an engine at SCHED_FIFO, a
#   run, a board's run) but assert only what holds on a loaded machine: counts,
#   structure, ground truth with margins. Or they read machine state the alone tests
#   change (the RT throttling).
# - background: everything else, on two workers, from the start: beside the alone pass
#   and then beside the shared one. These tests start no real-time work (stores,
#   reports, statistics, importers, the shell, PostgreSQL, cross builds), so a test in the
#   alone pass sees them as it would see any other program on the machine: load under the
#   fair scheduler, which its FIFO threads preempt (the suite passes beside
#   `stress-ng --cpu 2` too). scripts/test.sh runs this pass without CAP_SYS_NICE, so a
#   test here that tries to start real-time work fails ("SCHED_FIFO priority 80 was
#   refused") rather than disturbing a measurement: mark it `shared`.
# - lab: last, with nothing beside it: the emulated lab (marker emulab: Debian systems
#   booted under qemu-system), and the tests marked `sole`, whose claim needs no other
#   rtgauge command on the machine (every command's first step removes the cpuset groups
#   a killed rtgauge left: beside the background pass, another test's command removed
#   the group before the command under test could).
# The SSH target tests test_run_target and test_target_loads tell their board's
# processes and directories by its UTS namespace (tests/sshlab.py), never by a glob of
# the /tmp they share with the other workers, and so does test_target_ssh (its Ctrl-C of
# `rtgauge engine --target` aside, alone). test_target_tune stays alone (it tunes this
# machine, which is its board). Plain `pytest` runs
# everything in one pass (--pass all).
PASSES = ("alone", "shared", "background", "lab")


def pytest_addoption(parser):
    parser.addoption("--pass", dest="test_pass", default="all",
                     help="the pass of scripts/test.sh to run (tests/conftest.py): alone, shared, "
                          "background, lab, several joined by commas, or all (the default)")


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: this test needs the machine to itself (runs in the alone "
                                       "pass; a file's pytestmark puts all its tests there)")
    config.addinivalue_line("markers", "shared: this test starts real-time work, or reads machine state the "
                                       "alone tests change: never beside the alone pass (tests/conftest.py)")
    config.addinivalue_line("markers", "sole: this test needs no other rtgauge command running beside it (runs "
                                       "in the lab pass, last, with nothing beside it: tests/conftest.py)")
    wanted = config.getoption("test_pass")
    if wanted != "all" and not set(wanted.split(",")) <= set(PASSES):
        raise pytest.UsageError(f"--pass takes all, or one or more of {', '.join(PASSES)} joined by commas, "
                                f"not {wanted!r}")


def pass_of(item) -> str:
    """The pass of scripts/test.sh that runs ITEM (see PASSES above)."""
    if item.get_closest_marker("emulab") is not None or item.get_closest_marker("sole") is not None:
        return "lab"
    if item.get_closest_marker("alone") is not None:
        return "alone"
    if item.get_closest_marker("shared") is not None:
        return "shared"
    return "background"


def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("test_pass")
    if wanted == "all":
        return
    passes = set(wanted.split(","))
    keep, drop = [], []
    for item in items:
        (keep if pass_of(item) in passes else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
