"""The rtla timerlat cross-check (a profile's cross_check = ["rtla"]), in the parts this
machine can run: its kernel has no timerlat tracer, so rtla itself runs only on the
emulated lab's PREEMPT_RT boards (tests/test_emulab.py). Here: the command carries the
job's settings; the wrapper that stops it keeps what it measured (rtla prints its
histogram on SIGINT and dies silently on SIGTERM, which is how a job is stopped), shown
with a stand-in for rtla that behaves so, and with the wrapper left out (nothing kept);
a run where timerlat is missing skips the cross-check and says why with the measurement."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from conftest import needs_root, rtgauge
from readiness import wait_for
from rtgauge.store import open_store
from rtgauge.tools import rtla
from test_formats_rtla import SAMPLE

# a stand-in for rtla: measures until SIGINT, then prints the histogram and exits 0;
# SIGTERM kills it at its default (nothing printed), as it kills rtla
FAKE = f"""import signal, sys, time
def done(*_):
    sys.stdout.write({SAMPLE!r}); sys.stdout.flush(); sys.exit(0)
signal.signal(signal.SIGINT, done)
open(sys.argv[1], "w").write(" ".join(sys.argv[2:]))
time.sleep(60)
"""


def test_the_command_carries_the_jobs_settings():
    argv = rtla.command({"interval-us": 500, "duration-s": 2.5, "priority": 90, "policy": "fifo",
                         "histogram": 5000}, [0, 1], "/tmp/out")
    assert argv[:5] == ["sh", "-c", rtla.WRAPPER, "sh", "/tmp/out"]
    tool = argv[5:]
    assert tool[:3] == ["rtla", "timerlat", "hist"]
    opts = dict(zip(tool[3::2], tool[4::2]))
    assert opts == {"-p": "500", "-d": "3s", "-c": "0,1", "-P": "f:90", "-b": "1", "-E": "5000"}
    other = rtla.command({"policy": "other", "duration-s": 0.2}, [1], "/tmp/out")
    assert "-P" not in other and other[other.index("-d") + 1] == "1s"


def catches(pid: int, sig: int) -> bool:
    """Whether PID has a handler for SIG (SigCgt of /proc/PID/status): a shell's trap set."""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(mask >> (sig - 1) & 1)


def stopped_after(tmp_path, argv, wrapped: bool = True) -> tuple[int, str]:
    """ARGV sent SIGTERM once the stand-in runs (its args file written after its SIGINT
    handler is set) and, WRAPPED, the wrapper's trap is set (it starts the tool first)."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (tmp_path / "args").exists() and (not wrapped or catches(p.pid, signal.SIGTERM)),
             "the stand-in measuring" + (" and the wrapper's trap set" if wrapped else ""), proc=p)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    return p.returncode, err


def test_a_stopped_cross_check_keeps_what_it_measured_and_without_the_wrapper_nothing(tmp_path):
    (tmp_path / "fake.py").write_text(FAKE)
    out = tmp_path / "result.txt"
    fake = [sys.executable, str(tmp_path / "fake.py"), str(tmp_path / "args")]
    argv = ["sh", "-c", rtla.WRAPPER, "sh", str(out), *fake, "timerlat", "hist"]
    status, err = stopped_after(tmp_path, argv)
    assert status == 0, err
    doc = json.loads(rtla.as_json(out.read_bytes()))
    assert doc["metrics"]["timerlat_thread"]["count"] == 20_000 and doc["metrics"]["timerlat_irq"]["max"] == 2000
    # broken: the program stopped with SIGTERM itself, as the job's stop would without the wrapper
    (tmp_path / "args").unlink()
    bare = ["sh", "-c", 'out=$1; shift; exec "$@" >"$out"', "sh", str(out), *fake]
    status, _ = stopped_after(tmp_path, bare, wrapped=False)
    assert status == -signal.SIGTERM and out.read_bytes() == b""


def test_output_that_is_not_a_histogram_is_one_sentence():
    from rtgauge.errors import UserError
    with pytest.raises(UserError, match="not a histogram rtgauge reads"):
        rtla.as_json(b"rtla: could not enable timerlat tracer\n")


PROFILE = """name = "rtla-here"
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
cross_check = ["rtla"]
[jobs.options]
duration-s = 0.3
interval-us = 1000
"""


@needs_root
@pytest.mark.shared
def test_a_run_without_timerlat_skips_the_cross_check_and_says_why(tmp_path):
    why = rtla.local_unavailable()
    if why is None:
        pytest.skip("this kernel has timerlat and rtla: the cross-check runs here")
    (tmp_path / "p.toml").write_text(PROFILE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("run", "--profile", str(tmp_path / "p.toml"), "--db", db, "--no-report")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rtla timerlat cross-check is skipped" in " ".join((p.stdout + p.stderr).split())
    with open_store(db) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    assert [(m["name"], m["tool"]) for m in run["measurements"]] == [("latency@idle", "engine")]
    notes = run["measurements"][0]["document"]["env"].get("notes", [])
    assert any("rtla timerlat cross-check was not run" in n and why in n for n in notes), notes
