"""`python -m rtgauge ARGS` without paying the imports every time: a zygote.

The suite runs the command-line tool about two thousand times, and most of each
run's CPU time went into importing numpy, scipy and SQLAlchemy again
(about 1-2.5 s of CPU a process on this 2-vCPU machine, against a few tenths for
the command's own work). A zygote is a Python process that imports rtgauge and
those libraries once and then, per request, forks a child that runs
`python -m rtgauge ARGS` as the interpreter would: its own process, the caller's
argv, environment, working directory and stdin/stdout/stderr (the caller's pipe
ends, passed over a Unix socket), the module run as __main__, exit handlers run,
the exit status (or the killing signal) returned. What a test sees is what a
user's shell sees, except that the imports happened before the fork.

Tests that check what the interpreter's start-up itself does (which modules are
imported for --help, the time it takes) keep using a fresh interpreter
(conftest.rtgauge(..., fresh=True)).

Protocol on the socket: the client sends one JSON line {"args", "env", "cwd"} with
three file descriptors (stdin, stdout, stderr) attached; the zygote forks a waiter,
which forks the child and writes back one JSON line {"pid"} when the child starts and
one {"status"} when it ends (a negative status: killed by that signal, as
subprocess reports it). The zygote itself only accepts and forks, so it holds no
child state and never has a thread at a fork.
"""

from __future__ import annotations

import array
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the commands import, loaded once in the zygote (the command modules import
# the rest).
PRELOAD = ("rtgauge.cli", "rtgauge.cli.run", "rtgauge.cli.show", "rtgauge.cli.report", "rtgauge.cli.compare",
           "rtgauge.cli.pwcet", "rtgauge.cli.export", "rtgauge.cli.importing", "rtgauge.cli.doctor",
           "rtgauge.cli.lab", "rtgauge.cli.engine", "rtgauge.cli.tune", "rtgauge.cli.hil",
           "rtgauge.analysis.pwcet", "rtgauge.store", "numpy", "scipy.stats", "scipy.optimize",
           "sqlalchemy", "rich.console",
           "rich.table")


# ---- the zygote -----------------------------------------------------------------------

def _child(req: dict, fds: list[int]) -> None:
    """In the forked child: become `python -m rtgauge ARGS` and never return."""
    code = 1
    try:
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        tempfile.tempdir = None      # as in a new interpreter: from this TMPDIR, not the zygote's
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # The interpreter's sys.path[0] for -m is the working directory.
        sys.path[0] = os.getcwd()
        sys.argv = ["-m", *req["args"]]
        import runpy
        try:
            runpy.run_module("rtgauge", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            # As the interpreter does: the traceback, then death by SIGINT.
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:   # what the interpreter prints for an uncaught exception
            import traceback
            traceback.print_exc()
            code = 1
        import atexit
        atexit._run_exitfuncs()
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BrokenPipeError:
                # As the interpreter does when stdout is closed at exit.
                code = 120
            except Exception:
                pass
    finally:
        os._exit(code)


def _waiter(conn: socket.socket, req: dict, fds: list[int]) -> None:
    """In the forked waiter: start the child, report its pid and its end."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _child(req, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
        _, st = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(st)
        conn.sendall((json.dumps({"status": status}) + "\n").encode())
    finally:
        os._exit(0)


def serve(path: str) -> None:
    for name in PRELOAD:
        __import__(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # waiters are reaped by the kernel
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(64)
    print("ready", flush=True)
    parent = os.getppid()
    srv.settimeout(5)
    while True:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            if os.getppid() != parent:   # the test process is gone
                os._exit(0)
            continue
        conn.settimeout(None)
        try:
            msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            buf = msg
            while not buf.endswith(b"\n"):
                more = conn.recv(1 << 20)
                if not more:
                    break
                buf += more
            req = json.loads(buf)
        except (OSError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:
            srv.close()
            _waiter(conn, req, fds)
        conn.close()
        for fd in fds:
            os.close(fd)


# ---- the client -------------------------------------------------------------------

class Zygote:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="rtgauge-zygote-")
        self.path = os.path.join(self.dir, "sock")
        env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                                     f"from tests.zygote import serve; serve({self.path!r})"],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError("the test zygote did not start")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        try:
            os.unlink(self.path)
            os.rmdir(self.dir)
        except OSError:
            pass

    def run(self, args: list[str], *, env: dict, cwd: str, timeout: float, input: str | None = None,
            errors: str | None = None) -> subprocess.CompletedProcess:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        r_err, w_err = os.pipe()
        conn = self._request(args, env, cwd, [r_in, w_out, w_err])
        data = (input or "").encode()
        out, err, ctl = bytearray(), bytearray(), bytearray()
        sel = selectors.DefaultSelector()
        sel.register(r_out, selectors.EVENT_READ, out)
        sel.register(r_err, selectors.EVENT_READ, err)
        sel.register(conn, selectors.EVENT_READ, ctl)
        if data:
            os.set_blocking(w_in, False)
            sel.register(w_in, selectors.EVENT_WRITE, None)
        else:
            os.close(w_in)
        deadline = time.monotonic() + timeout
        pid = status = None
        open_fds = 3
        try:
            while open_fds or status is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    if pid:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    raise subprocess.TimeoutExpired(["rtgauge", *args], timeout, bytes(out), bytes(err))
                for key, _ in sel.select(min(left, 1.0)):
                    if key.data is None:          # stdin
                        try:
                            n = os.write(w_in, data)
                            data = data[n:]
                        except BrokenPipeError:
                            data = b""
                        if not data:
                            sel.unregister(w_in)
                            os.close(w_in)
                        continue
                    chunk = (key.fileobj.recv(65536) if key.fileobj is conn else os.read(key.fileobj, 65536))
                    if not chunk:
                        sel.unregister(key.fileobj)
                        open_fds -= 1
                        if key.fileobj is conn and status is None:
                            raise RuntimeError("the test zygote lost a child without its status")
                        continue
                    key.data.extend(chunk)
                    if key.data is ctl:
                        for line in bytes(ctl).splitlines():
                            msg = json.loads(line)
                            pid = msg.get("pid", pid)
                            status = msg.get("status", status)
        finally:
            sel.close()
            for fd in (r_out, r_err):
                os.close(fd)
            if data:
                os.close(w_in)
            conn.close()
        def text(b: bytearray) -> str:   # as subprocess.run(text=True): universal newlines
            return b.decode("utf-8", errors or "strict").replace("\r\n", "\n").replace("\r", "\n")
        return subprocess.CompletedProcess(["rtgauge", *args], status, text(out), text(err))

    def _request(self, args: list[str], env: dict, cwd: str, fds: list[int]) -> socket.socket:
        """Ask for a child with these stdin, stdout and stderr (closed here once sent): the
        connection its waiter answers on."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            head = (json.dumps({"args": list(args), "env": env, "cwd": str(cwd)}) + "\n").encode()
            socket.send_fds(conn, [head], fds)
        except BaseException:
            conn.close()
            raise
        finally:
            for fd in fds:
                os.close(fd)
        return conn

    def popen(self, args: list[str], *, env: dict, cwd: str) -> "Process":
        """Start `python -m rtgauge ARGS` and return at once: a Popen-like handle (stdin
        from /dev/null, stdout and stderr as text pipes)."""
        r_out, w_out = os.pipe()
        r_err, w_err = os.pipe()
        try:
            conn = self._request(args, env, cwd, [os.open(os.devnull, os.O_RDONLY), w_out, w_err])
        except BaseException:
            for fd in (r_out, r_err):
                os.close(fd)
            raise
        return Process(["rtgauge", *args], conn, r_out, r_err)


class Process:
    """What a test uses of subprocess.Popen(..., stdout=PIPE, stderr=PIPE, text=True) for
    a child of the zygote: pid, poll, wait, communicate, send_signal, terminate, kill,
    returncode, stdout, stderr. The child is a real process (signals go to it); its end
    comes from the zygote's waiter over the socket."""

    def __init__(self, args: list[str], conn: socket.socket, r_out: int, r_err: int) -> None:
        self.args = args
        self._conn = conn
        self._buf = b""
        self.returncode: int | None = None
        self.stdout = open(r_out, "r", encoding="utf-8", errors="replace")
        self.stderr = open(r_err, "r", encoding="utf-8", errors="replace")
        self.pid = self._next()["pid"]

    def _next(self, timeout: float | None = None) -> dict:
        """The next message of the waiter (blocking up to timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._conn.settimeout(left)
            try:
                chunk = self._conn.recv(4096)
            except socket.timeout:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            if not chunk:
                raise RuntimeError("the test zygote lost a child without its status")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._next(timeout)["status"]
            self._conn.close()
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0.001)
        except subprocess.TimeoutExpired:
            return None

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        import threading
        out: dict = {}
        readers = [threading.Thread(target=lambda f=f: out.__setitem__(f, f.read()), daemon=True)
                   for f in (self.stdout, self.stderr)]
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in readers:
            t.start()
        for t in readers:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.001, deadline - time.monotonic()))
        return out[self.stdout], out[self.stderr]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for f in (self.stdout, self.stderr):
            f.close()
        self.wait()


_zygote: Zygote | None = None
_owner = None


def zygote() -> Zygote:
    """This process's zygote, started at the first use (one per pytest-xdist worker)."""
    global _zygote, _owner
    if _zygote is None or _owner != os.getpid():
        _zygote, _owner = Zygote(), os.getpid()
        import atexit
        atexit.register(_zygote.close)
    return _zygote
