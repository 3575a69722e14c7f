"""A throwaway PostgreSQL server for the test session.

PostgreSQL refuses to run as root, so as root the cluster is created and run
as the `postgres` user (runuser) in a temporary directory it owns; as another
user it runs as that user. It listens on a free port of 127.0.0.1 with trust
authentication, and is stopped and deleted afterwards. When it cannot be
started, `postgres_url` skips with the reason.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from rtgauge.loads.base import keep_group_weight

SUPERUSER = "postgres"


class ServerUnavailable(Exception):
    pass


def newest_bin_dir() -> Path:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise ServerUnavailable("PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self):
        self.bin = newest_bin_dir()
        self.as_user = self._server_user()
        self.root = Path(tempfile.mkdtemp(prefix="rtgauge-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._databases = itertools.count(1)
        if self.as_user:
            pw = pwd.getpwnam(self.as_user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)

    @staticmethod
    def _server_user() -> str | None:
        """Whom to run the server as: None means ourselves."""
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise ServerUnavailable("running as root and there is no `postgres` user to run the server as") from None
        if not shutil.which("runuser"):
            raise ServerUnavailable("running as root and `runuser` is missing")
        return "postgres"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / tool), *args]
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if p.returncode != 0:
            raise ServerUnavailable(f"{tool} failed: {(p.stderr or p.stdout).strip()[-400:]}")
        return p

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", SUPERUSER, "--no-sync", "-E", "UTF8")
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
                  "-w", "-t", "30", "start")
        # pg_ctl starts the server in a session of its own: where the scheduler groups by
        # session (autogroup) it would weigh as any program at the default nice, whatever
        # the test's pass weighs (scripts/test.sh); its backends are forked from it
        postmaster = self._postmaster()
        if postmaster:
            keep_group_weight(postmaster)

    def stop(self) -> None:
        """pg_ctl's immediate stop; then whatever of the server is still there is killed
        (a test that froze it with SIGSTOP may leave a process that cannot act on the
        postmaster's SIGQUIT, and pg_ctl then times out), so no server outlives a test."""
        postmaster = self._postmaster()
        try:
            if postmaster:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "20", "stop", timeout=30)
        except (ServerUnavailable, subprocess.TimeoutExpired):
            pass
        finally:
            if postmaster and self._is_ours(postmaster):
                _kill_tree(postmaster)
            shutil.rmtree(self.root, ignore_errors=True)

    def _is_ours(self, pid: int) -> bool:
        """pid is still this server's postmaster (not a pid used again since it ended)."""
        try:
            return str(self.data).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    def _postmaster(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh empty database, so each test starts from nothing; returns its URL."""
        import psycopg

        name = f"rtgauge_test_{next(self._databases)}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _kill_tree(pid: int) -> None:
    """SIGKILL pid and its descendants (stopped ones too: SIGKILL needs no SIGCONT)."""
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(Path(stat).parent.name))
    todo, tree = [pid], []
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    for p in tree:
        try:
            os.kill(p, 9)
        except ProcessLookupError:
            pass


# Test modules import the fixture, so pytest sees one session fixture per module;
# they share this one server, started by the first and stopped by the last.
_shared: PgServer | None = None
_users = 0
_unavailable: str | None = None


def acquire() -> PgServer:
    global _shared, _users, _unavailable
    if _unavailable:
        raise ServerUnavailable(_unavailable)
    if _shared is None:
        try:
            server = PgServer()
        except ServerUnavailable as e:
            _unavailable = str(e)
            raise
        try:
            server.start()
        except (ServerUnavailable, subprocess.TimeoutExpired) as e:
            server.stop()
            _unavailable = str(e)
            raise ServerUnavailable(_unavailable) from None
        _shared = server
    _users += 1
    return _shared


def release() -> None:
    global _shared, _users
    _users -= 1
    if _users == 0 and _shared is not None:
        _shared.stop()
        _shared = None


@pytest.fixture(scope="session")
def postgres_server():
    """The session's PostgreSQL server, or a skip saying why there is none."""
    try:
        server = acquire()
    except ServerUnavailable as e:
        pytest.skip(f"no PostgreSQL server: {e}")
    yield server
    release()
