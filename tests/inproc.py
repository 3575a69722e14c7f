"""`rtgauge ARGS` inside the test process: rtgauge.cli.main(argv), as the interpreter
would run `python -m rtgauge ARGS` in a process of its own, without paying a new
interpreter (and the imports of numpy, scipy, SQLAlchemy and rich) for each call.

run() gives the command, for the time of the call, what a process of its own would
have, and puts everything back afterwards:
- os.environ is the given environment (children inherit it; TZ takes effect);
  tempfile's directory is chosen again from it;
- the working directory, sys.argv (argv[0] the path of rtgauge/__main__.py, as -m sets);
- file descriptors 0, 1 and 2 are pipes, and sys.stdin/stdout/stderr text streams on
  them, buffered as the interpreter's are (stdout by block, stderr by line). Capture is
  at the descriptor level because the commands' children (the engine, loads, tools)
  inherit 1 and 2 and write there, `-o /dev/stdout` reopens descriptor 1, and a closed
  stdout points descriptor 1 at /dev/null (rtgauge/errors.py). Pipes, not files: a
  reopened /dev/stdout on a regular file would start at offset 0 (and "w" truncates);
- the signal dispositions of a new interpreter (SIGINT raises KeyboardInterrupt,
  SIGTERM, SIGHUP and SIGCHLD default, SIGPIPE ignored); every disposition, the signal
  mask and the CPU affinity the command changed are restored;
- the warning filters of a plain interpreter, warnings printed on its stderr; the root
  logger without pytest's handlers (so logging's last resort prints on its stderr);
- the engine catalogue's in-memory cache emptied (a new process starts without it).

The exit status is the interpreter's: main()'s return value, SystemExit's code, an
uncaught exception's traceback on stderr and status 1 (KeyboardInterrupt: -SIGINT), 120
when stdout cannot be flushed at the end. Non-daemon threads the command leaves are
joined, as at interpreter exit. The timeout is a watchdog (SIGALRM): the command is
interrupted and subprocess.TimeoutExpired raised, with what it printed so far.

What this cannot be is listed in conftest.BLACK_BOX: those calls start a new interpreter.
"""

from __future__ import annotations

import locale
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "rtgauge" / "__main__.py")

# A new interpreter's dispositions for the signals the commands look at or change.
FRESH_SIGNALS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                 signal.SIGHUP: signal.SIG_DFL, signal.SIGCHLD: signal.SIG_DFL, signal.SIGPIPE: signal.SIG_IGN,
                 signal.SIGXFSZ: signal.SIG_IGN, signal.SIGALRM: signal.SIG_DFL}
CATCHABLE = sorted(set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP})

# The warning filters of `python` without -W or PYTHONWARNINGS (the last one first).
DEFAULT_WARNINGS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                    ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                    ("ignore", ResourceWarning, ""))


class Watchdog(BaseException):
    """The call outlived its timeout (raised in the main thread by SIGALRM)."""


def _drain(fd: int, into: bytearray) -> None:
    try:
        while chunk := os.read(fd, 65536):
            into += chunk
    finally:
        os.close(fd)


def _feed(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _show_on_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _status(entry, args: list[str]) -> int:
    """What `sys.exit(entry(args))` in a new interpreter would exit with."""
    try:
        code = entry(list(args))
    except Watchdog:
        raise
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        return 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _text(data: bytearray, encoding: str, errors: str | None) -> str:
    """As subprocess.run(text=True) decodes: universal newlines."""
    return bytes(data).decode(encoding, errors or "strict").replace("\r\n", "\n").replace("\r", "\n")


def run(args: list[str], *, env: dict, cwd: str | Path, timeout: float, input: str | None = None,
        errors: str | None = None, entry=None) -> subprocess.CompletedProcess:
    """`python -m rtgauge ARGS` with this environment, working directory and stdin, in
    this process: subprocess.run(..., capture_output=True, text=True)'s result. entry:
    another main(argv) to run so (tests/test_inproc.py)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("tests/inproc.run works in the main thread only (it sets signal dispositions)")
    from rtgauge import catalogue
    if entry is None:
        from rtgauge.cli import main as entry

    cmd = ["rtgauge", *args]
    encoding = locale.getpreferredencoding(False)
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    r_in, w_in = os.pipe()
    pumps = [threading.Thread(target=_drain, args=(r_out, out), daemon=True),
             threading.Thread(target=_drain, args=(r_err, err), daemon=True),
             threading.Thread(target=_feed, args=(w_in, (input or "").encode(encoding)), daemon=True)]
    for t in pumps:
        t.start()

    for f in (sys.stdout, sys.stderr):
        f.flush()
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv, saved_tempdir = sys.argv, tempfile.tempdir
    saved_handlers = {s: signal.getsignal(s) for s in CATCHABLE}
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    saved_affinity = os.sched_getaffinity(0)
    root = logging.getLogger()
    saved_log = root.handlers[:], root.level
    threads_before = set(threading.enumerate())
    streams = []
    status = None
    timed_out = False
    try:
        for fd, new in ((0, r_in), (1, w_out), (2, w_err)):
            os.dup2(new, fd)
            os.close(new)
        streams = [open(0, "r", encoding=encoding, closefd=False),
                   open(1, "w", encoding=encoding, closefd=False),
                   open(2, "w", encoding=encoding, errors="backslashreplace", buffering=1, closefd=False)]
        sys.stdin, sys.stdout, sys.stderr = streams
        os.environ.clear()
        os.environ.update(env)
        if os.environ.get("TZ") != saved_env.get("TZ"):
            time.tzset()
        os.chdir(cwd)
        sys.argv = [MAIN, *args]
        tempfile.tempdir = None
        catalogue._memory.clear()
        for s, h in FRESH_SIGNALS.items():
            signal.signal(s, h)
        root.handlers = []
        root.setLevel(logging.WARNING)

        def expire(signum, frame):
            raise Watchdog
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(DEFAULT_WARNINGS):
                warnings.filterwarnings(action, category=category, module=module)
            warnings.showwarning = _show_on_stderr
            signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))
            try:
                status = _status(entry, args)
                for t in set(threading.enumerate()) - threads_before:   # as the interpreter at exit
                    if not t.daemon:
                        t.join(max(0.0, deadline - time.monotonic()))
                try:
                    sys.stdout.flush()
                except Exception:
                    status = 120
                sys.stderr.flush()
            except Watchdog:
                timed_out = True
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        for f in streams:
            try:
                f.close()
            except Exception:
                pass
        for fd, saved in enumerate(saved_fds):
            os.dup2(saved, fd)
            os.close(saved)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.environ.clear()
        os.environ.update(saved_env)
        if os.environ.get("TZ") != env.get("TZ"):
            time.tzset()
        os.chdir(saved_cwd)
        sys.argv, tempfile.tempdir = saved_argv, saved_tempdir
        for s, h in saved_handlers.items():
            if h is not None and signal.getsignal(s) is not h:
                signal.signal(s, h)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
        if os.sched_getaffinity(0) != saved_affinity:
            os.sched_setaffinity(0, saved_affinity)
        root.handlers[:] = saved_log[0]
        root.setLevel(saved_log[1])

    # stdout and stderr end when every process holding them (the command's children
    # included) has closed them, as subprocess.run waits for
    for t in pumps[:2]:
        t.join(max(0.0, deadline - time.monotonic()))
        timed_out = timed_out or t.is_alive()
    if timed_out:
        raise subprocess.TimeoutExpired(cmd, timeout, bytes(out), bytes(err))
    return subprocess.CompletedProcess(cmd, status, _text(out, encoding, errors), _text(err, encoding, errors))
