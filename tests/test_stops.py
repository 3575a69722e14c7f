"""A stop is never lost on its way (rtgauge/stops.py).

The CI failure this guards: a SIGTERM during the tire sweep landed in an after-fork hook
(logging registers one), Python printed "Exception ignored" and dropped the
KeyboardInterrupt, and the run went on to end "complete", exit 0. The test makes that
happen on purpose: an after-fork hook sends the process SIGTERM, so the handler runs
inside the hook, where its exception is dropped. The plain raising handler (the broken
method) goes on with its child to the end; rtgauge's ends the child at once."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from rtgauge import stops
    sent = []
    def hook():
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGTERM)   # its handler runs inside this hook
    os.register_at_fork(after_in_parent=hook)      # as logging's is
    def plain(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stops.interrupt if sys.argv[1] == "stops" else plain)
    argv = ["sleep", "3"]
    try:
        if sys.argv[1] == "stops":
            stops.run_child(argv, timeout=60, preexec_fn=lambda: None)
        else:
            subprocess.run(argv, capture_output=True, timeout=60, preexec_fn=lambda: None)
        print("went on")
    except KeyboardInterrupt:
        print("stopped")
""")


def run(method: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, method], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_stop_during_the_fork_ends_the_child_and_prints_nothing():
    """run_child blocks the stop signals while it forks: the SIGTERM sent in the hook waits
    until the child exists, is raised in run_child, which kills the child; nothing is
    dropped or printed."""
    p = run("stops")
    assert p.stdout.strip() == "stopped" and "Exception ignored" not in p.stderr, p.stderr


def test_the_plain_handler_loses_it():
    """The broken method, kept so the test above can be seen to matter (3 s): the
    KeyboardInterrupt raised in the hook is dropped, as in CI, and the child runs on."""
    p = run("plain")
    assert p.stdout.strip() == "went on" and "Exception ignored" in p.stderr, p.stderr


def test_a_stop_dropped_elsewhere_is_still_seen_by_run_child():
    """The second defence: a stop whose KeyboardInterrupt was dropped somewhere else (a
    __del__, a weakref callback) is recorded, and the next child run sees it at once."""
    import signal
    from rtgauge import stops
    stops.clear()
    try:
        stops.interrupt(signal.SIGTERM, None)
    except KeyboardInterrupt:
        pass                                   # dropped, as Python drops it in such callbacks
    try:
        with pytest.raises(KeyboardInterrupt):
            stops.run_child(["sleep", "20"], timeout=60)
    finally:
        stops.clear()


def test_run_child_times_out_and_kills():
    from rtgauge import stops
    stops.clear()
    with pytest.raises(subprocess.TimeoutExpired):
        stops.run_child(["sleep", "20"], timeout=0.5)


def test_run_child_returns_what_the_child_printed():
    from rtgauge import stops
    stops.clear()
    p = stops.run_child(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert (p.returncode, p.stdout, p.stderr) == (3, "out\n", "err\n")
