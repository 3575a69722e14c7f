"""A stop asked by a signal (SIGINT, SIGTERM, SIGHUP), kept as well as raised.

A handler that only raises KeyboardInterrupt can lose the stop: Python runs a signal's
handler between bytecodes, and where that falls inside a callback whose exceptions are
printed and dropped (the `os.register_at_fork` hooks that run around every
subprocess start, `__del__`, a weakref callback), the KeyboardInterrupt is printed as
"Exception ignored" and the command goes on. One CI run saw exactly that: a SIGTERM
during the tire sweep landed in logging's after-fork hook, the probe ran on and the run
ended "complete", exit 0. So `interrupt` records the signal before raising, and the
long waits (`run_child`, `check`) raise again when a recorded stop is still pending.
"""

from __future__ import annotations

import signal
import subprocess

_asked: str | None = None


def interrupt(signum, frame) -> None:
    """A signal handler: the stop recorded, then raised as Ctrl-C raises it."""
    global _asked
    _asked = signal.Signals(signum).name
    raise KeyboardInterrupt


def asked() -> str | None:
    """The signal that asked for a stop since the last `clear()`, or None."""
    return _asked


def clear() -> None:
    global _asked
    _asked = None


def check() -> None:
    """Raise KeyboardInterrupt when a stop was asked (and perhaps lost on its way)."""
    if _asked:
        raise KeyboardInterrupt


def run_child(argv: list[str], timeout: float, preexec_fn=None, poll_s: float = 0.2) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, text=True, timeout=...) that also ends
    when a stop is asked, lost or not: the child is killed and waited for, then
    KeyboardInterrupt. On the timeout the child is killed and TimeoutExpired raised."""
    check()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=preexec_fn)
    waited = 0.0
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=poll_s)
                break
            except subprocess.TimeoutExpired:
                waited += poll_s
                check()
                if waited >= timeout:
                    raise subprocess.TimeoutExpired(argv, timeout) from None
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
