"""A stop asked by a signal (SIGINT, SIGTERM, SIGHUP), kept as well as raised.

A handler that only raises KeyboardInterrupt can lose the stop: Python runs a signal's
handler between bytecodes, and where that falls inside a callback whose exceptions are
printed and dropped (the `os.register_at_fork` hooks that run around every
subprocess start, `__del__`, a weakref callback), the KeyboardInterrupt is printed as
"Exception ignored" and the command goes on. One CI run saw exactly that: a SIGTERM
during the tire sweep landed in logging's after-fork hook, the probe ran on and the run
ended "complete", exit 0. So `interrupt` records the signal before raising, the long
waits (`run_child`, `check`) raise again when a recorded stop is still pending, and
`run_child` blocks the stop signals while it forks, so none lands in such a hook.
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


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _unblocking(then=None):
    """A preexec_fn: the child starts with the stop signals unblocked (they are blocked in
    the parent while it forks), then runs THEN."""
    def preexec():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if then is not None:
            then()
    return preexec


def run_child(argv: list[str], timeout: float, preexec_fn=None, poll_s: float = 0.2) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, text=True, timeout=...) that also ends
    when a stop is asked: the child is killed and waited for, then KeyboardInterrupt. On
    the timeout the child is killed and TimeoutExpired raised. The stop signals are
    blocked while the child is forked, so that none lands in an after-fork hook (where
    Python drops the KeyboardInterrupt and prints "Exception ignored … Traceback"): one
    that came meanwhile is raised once the child exists, and it is killed."""
    check()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=_unblocking(preexec_fn))
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        raise
    waited = 0.0
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)    # a stop that came meanwhile is raised here
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
