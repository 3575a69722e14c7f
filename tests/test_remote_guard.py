"""The guard (rtgauge/remote/guard.sh after heartbeat.sh) that runs a measurement on a
board, run here with sh as a board runs it: a heartbeat keeps the measurement going; a heartbeat file
caught half-rewritten (truncated, its date not yet written: on a loaded board under
emulation the reader's fork and exec of date take long) is not a silence. It was
read as 0 and stopped the measurement at once ("no word from the client for 50 s"
seconds into a job), which left cyclictest on the emulated armhf with no cycle."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from rtgauge.remote.ssh import GUARD, script_text



def guarded(tmp_path: Path, seconds: float, silence_s: int, heartbeat: bool, truncate: bool):
    """The guard running `sleep SECONDS` (its --out arguments go to sh's $1 $2), fed a
    heartbeat every half second or nothing; `truncate`: the heartbeat file is emptied
    every 10 ms meanwhile, as the reader's rewrite leaves it for a moment."""
    d = tmp_path / "run"
    d.mkdir()
    started = time.monotonic()      # before the guard starts: its sleep begins in Popen
    proc = subprocess.Popen(["sh", "-c", script_text(GUARD).decode(), "sh", str(d), str(silence_s), "sh", "-c", f"sleep {seconds}", "sh"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = threading.Event()

    def beat():
        last = 0.0
        while not done.is_set() and proc.poll() is None:
            if heartbeat and time.monotonic() - last >= 0.5:
                last = time.monotonic()
                try:
                    proc.stdin.write(b"\n")
                    proc.stdin.flush()
                except OSError:
                    return
            if truncate:          # empty nearly all the time: the guard's every read sees it
                (d / "alive").write_text("")
            time.sleep(0.01)      # the truncation's schedule (and the heartbeat's look): the subject
    t = threading.Thread(target=beat, daemon=True)
    t.start()
    try:
        status = proc.wait(timeout=seconds + silence_s + 60)
    finally:
        done.set()
        t.join()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
    return status, time.monotonic() - started, (d / "err").read_text() if (d / "err").exists() else ""


def test_a_half_written_heartbeat_file_is_not_a_silence(tmp_path):
    status, took, err = guarded(tmp_path, seconds=4, silence_s=2, heartbeat=True, truncate=True)
    assert status == 0 and "no word" not in err, (status, err)
    assert took >= 4


def test_a_real_silence_still_stops_it(tmp_path):
    status, took, err = guarded(tmp_path, seconds=60, silence_s=2, heartbeat=False, truncate=False)
    assert status != 0 and "no word from the client for 2 s" in err
    assert took < 30
