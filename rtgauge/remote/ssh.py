"""A target reached over SSH: ssh://[user@]host[:port].

The connection goes through asyncssh with the user's OpenSSH setup: ~/.ssh/config
(Host aliases, HostName, User, Port, IdentityFile, ProxyCommand...), the agent
($SSH_AUTH_SOCK), the default keys and ~/.ssh/known_hosts (an unknown host key
is refused, as ssh does). On the target rtgauge

- checks the login may run real-time threads (root, or an rtprio limit >= 99),
- reads the machine (uname -m) and puts an engine built for it (engines.build)
  into a fresh temporary directory (mktemp -d), with guard.sh,
- runs a test under guard.sh, which stops the engine when rtgauge stops, says
  "stop" (Ctrl-C), or falls silent (a connection lost without a word): the
  heartbeat is a line a second, the guard waits SILENCE_S seconds,
- reads the document back and removes the directory.

Only the commands of a POSIX shell with cat, mktemp, chmod, rm, date, sleep,
kill and uname are needed there (no Python, no sftp): a BusyBox board will do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import require_extra, RunFailed, UserError
from rtgauge.store.validate import DOCUMENT_MAX, parse_document
from rtgauge.sysinfo.readers import FILE_READ_MAX
from rtgauge.remote import engines

asyncssh = require_extra("asyncssh", "ssh", "ssh:// targets")


class _ReapedTwice(logging.Filter):
    """asyncio's child watcher warns "Unknown child process pid N" when a
    ProxyCommand ends as its connection fails: asyncio's own transport reaped it
    first (a race inside asyncio). It says nothing to a user who was told in one
    sentence that the target cannot be reached, so it is not printed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unknown child process pid")


logging.getLogger("asyncio").addFilter(_ReapedTwice())

HEARTBEAT = "rtgauge-heartbeat"   # the name of the tasks that keep a guard or a keeper alive
SILENCE_S = 5          # the guard stops the engine after this long without a heartbeat
CONNECT_TIMEOUT_S = 15
KEEPALIVE_S = 2        # and asyncssh gives up on a silent connection after 3 of these
GUARD = Path(__file__).with_name("guard.sh")
KEEP = Path(__file__).with_name("keep.sh")
FRAME = b"\x1ertgauge-file "   # starts each file in a framed read (read_files), then "SIZE NAME" and a newline
# What one read from a target may bring (all files together), and how many files: the
# host's memory stays bounded whatever the board holds (docs/design.md).
TRANSFER_MAX = 96 * 1024**2
FRAMES_MAX = 100_000
# read_files' loop in one process where the target has perl: each readable regular file,
# cut at CAP bytes, framed as the shell's loop frames it
PERL_READ = ('binmode STDOUT; my $cap = shift; for my $f (@ARGV) { next unless -f $f && -r _; '
             'open(my $h, "<", $f) or next; binmode $h; my ($b, $n) = ("", 1); '
             'while ($n && length($b) < $cap) { my $k = $cap - length($b); '
             '$n = read($h, $b, $k < 65536 ? $k : 65536, length($b)); } close $h; '
             'next unless defined $n; print "\\036rtgauge-file ", length($b), " $f\\n", $b; }')
TEXT_TAIL = 64 * 1024      # the end of a tool's stderr kept


@dataclass(frozen=True)
class Address:
    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host     # an IPv6 address keeps its brackets
        return "ssh://" + (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")


_URL = re.compile(r"^ssh://(?:(?P<user>[^@/:\s]+)@)?(?P<host>[^@/:\s]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d+))?/?$")


def parse(text: str) -> Address:
    shown = text[:80].encode("utf-8", "backslashreplace").decode("utf-8") + ("…" if len(text) > 80 else "")
    m = _URL.match(text.strip())
    if not m or (m["port"] and not 0 < int(m["port"]) < 65536):
        raise UserError(f"target {shown!r} is not an SSH address; write ssh://[user@]host[:port].")
    host = m["host"][1:-1] if m["host"].startswith("[") else m["host"]
    if not host_name_ok(host) or not host_name_ok(m["user"] or "x", user=True):
        raise UserError(f"target {shown!r} is not an SSH address: a host name is ASCII or IDNA, at most 253 "
                        "characters, 63 a label (and a user name at most 32 printable characters); check it.")
    return Address(host, m["user"], int(m["port"]) if m["port"] else None)


def host_name_ok(name: str, user: bool = False) -> bool:
    """A name asyncssh and the resolver can take: encodable (no lone surrogate), bounded."""
    if user:
        return len(name) <= 32 and name.isprintable() and name.isascii()
    if ":" in name:                       # an IPv6 literal, matched by _URL already
        return len(name) <= 45
    try:
        encoded = name.encode("idna")
    except UnicodeError:
        return False
    return len(encoded) <= 253 and all(0 < len(label) <= 63 for label in encoded.rstrip(b".").split(b"."))


CONFIG_ENV = "RTGAUGE_SSH_CONFIG"
PATIENCE_ENV = "RTGAUGE_TARGET_PATIENCE"


def patience() -> float:
    """$RTGAUGE_TARGET_PATIENCE: how many times longer than on a board rtgauge waits
    for a slow target (a system under software emulation takes tens of seconds for
    what a board does in one): the connection's timeout and keepalive, the guard's
    silence, each command's time limit. Default 1."""
    text = os.environ.get(PATIENCE_ENV, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 1 <= value <= 100:
        raise UserError(f"{PATIENCE_ENV}={text[:20]} is not a factor between 1 and 100; set it to how many times "
                        "slower than a board the target answers (an emulated lab: 10), or unset it.")
    return value


def ssh_config() -> dict:
    """$RTGAUGE_SSH_CONFIG: more OpenSSH client configuration files (separated by
    ':'), read after ~/.ssh/config (an emulated lab's Host aliases, docs/lab.md)."""
    extra = [p for p in os.environ.get(CONFIG_ENV, "").split(os.pathsep) if p]
    if not extra:
        return {}
    for p in extra:
        if not os.path.isfile(p):
            raise UserError(f"{CONFIG_ENV} names {p[:80]}, which is not a file; give the ssh_config an emulated "
                            f"lab writes (or unset {CONFIG_ENV}).")
    default = os.path.expanduser("~/.ssh/config")
    return {"config": ([default] if os.path.isfile(default) else []) + extra}


class ConnectionLost(RunFailed):
    """The connection to the target went away during a run; the guard there stops the engine."""


@dataclass
class Kept:
    """A process kept on the target under keep.sh (a load, a tuning held for a run)."""
    directory: str
    proc: object             # the asyncssh process running keep.sh
    beat: asyncio.Task       # the heartbeat
    pid: int | None = None   # its session (and process group) id there


def parse_frames(out: bytes, limit: int = FILE_READ_MAX) -> dict[str, bytes]:
    """The files of a framed read: each is `\\036rtgauge-file SIZE NAME\\n` then exactly
    SIZE bytes, so nothing inside a file (a forged header in /etc/machine-id) can start
    another. A file the board cut at FILE_READ_MAX + 1 bytes is left out (too large to
    read; `limit`); a stream that breaks the framing is refused with one sentence."""
    files: dict[str, bytes] = {}
    start = out.find(FRAME)          # a shell's chatter before the first frame is not ours
    if start < 0:
        return files
    pos = start
    while pos < len(out):
        if out[pos:pos + len(FRAME)] != FRAME or len(files) >= FRAMES_MAX:
            raise RunFailed("the target's reply to a file read is not framed as rtgauge frames it "
                            "(or holds too many files); check the target's shell and try again.")
        end = out.find(b"\n", pos, pos + len(FRAME) + 4200)
        size_text, _, name = out[pos + len(FRAME):end].partition(b" ") if end >= 0 else (b"", b"", b"")
        if end < 0 or not size_text.isdigit() or not name:
            raise RunFailed("the target's reply to a file read has a broken frame header; check the "
                            "target's shell and try again.")
        size = int(size_text)
        content = out[end + 1:end + 1 + size]
        if len(content) != size:
            raise RunFailed("the target's reply to a file read ended inside a file (the connection or "
                            "the shell there cut it); try again.")
        if size <= limit:
            files[name.decode(errors="replace")] = content
        pos = end + 1 + size
    return files


@dataclass
class RemoteRun:
    document: dict | None   # the engine's document (also when stopped: "interrupted": true)
    status: int             # the engine's exit status
    stderr: str
    directory: str          # the temporary directory used on the target (removed)


class SshTarget:
    """async with SshTarget(parse("ssh://root@board")) as t: run = await t.run_engine([...])"""

    def __init__(self, address: Address, silence_s: int | None = None):
        self.address = address
        self.patience = patience()
        self.silence_s = silence_s if silence_s is not None else round(SILENCE_S * self.patience)
        self.conn: asyncssh.SSHClientConnection | None = None
        self.machine = ""
        self.hostname = ""
        self.last_run: RemoteRun | None = None

    async def __aenter__(self) -> SshTarget:
        a = self.address
        opts = {"username": a.user} if a.user else {}
        if a.port:
            opts["port"] = a.port
        opts.update(ssh_config())
        try:
            self.conn = await asyncio.wait_for(asyncssh.connect(
                a.host, keepalive_interval=KEEPALIVE_S * self.patience, keepalive_count_max=3, **opts),
                CONNECT_TIMEOUT_S * self.patience)
        except asyncssh.HostKeyNotVerifiable as e:
            raise UserError(f"the host key of {a} is not known or has changed ({e.reason}); check it and add it to "
                            "~/.ssh/known_hosts (ssh to it once).") from None
        except asyncssh.PermissionDenied:
            raise UserError(f"{a} refused the login; give it your public key (ssh-copy-id) or load your key "
                            "into ssh-agent, and check the user name.") from None
        except (OSError, asyncio.TimeoutError, asyncssh.Error) as e:
            why = getattr(e, "reason", None) or str(e) or type(e).__name__
            raise UserError(f"cannot reach {a} ({why}); check the address, that sshd runs there and the "
                            "network.") from None
        try:
            await self._check()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.wait_closed(), 5)
            self.conn = None

    async def _sh(self, command: str, input: bytes | None = None, check: bool = True) -> str:
        r = await self.conn.run(command, input=input, encoding=None if input is not None else "utf-8",
                                check=False)
        out = r.stdout.decode() if isinstance(r.stdout, bytes) else (r.stdout or "")
        if check and r.exit_status is None and r.exit_signal is None:
            raise ConnectionLost(f"the session of `{command.split()[0]}` on {self.address} ended without an exit "
                                 "status (the connection or sshd there went away).")
        if check and r.exit_status != 0:
            err = r.stderr.decode() if isinstance(r.stderr, bytes) else (r.stderr or "")
            raise RunFailed(f"`{command.split()[0]}` failed on {self.address} ({err.strip() or r.exit_status}).")
        return out

    async def _sh_bytes(self, command: str, limit: int = TRANSFER_MAX) -> bytes:
        """The command's stdout, read as it comes and cut off (one sentence) past `limit`
        bytes, so what a board sends never grows the host's memory without bound."""
        proc = await self.conn.create_process(command, encoding=None)
        chunks, size = [], 0
        try:
            while True:
                chunk = await proc.stdout.read(1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise RunFailed(f"{self.address} sent more than {limit // 1024**2} MiB for one read "
                                    f"(`{command.split()[0]}`); rtgauge reads no more than that from a target.")
                chunks.append(chunk)
        finally:
            proc.close()
        return b"".join(chunks)

    async def read_files(self, paths: str, extra: list[tuple[str, str]] = (),
                         limit: int = FILE_READ_MAX) -> dict[str, bytes]:
        """Many files of the target in one command: `paths` is a list of paths and
        shell globs (expanded there); the readable regular files come back by path,
        byte for byte, each length-framed (parse_frames) and cut at `limit` + 1 bytes
        there (a larger file is left out). `extra`: (NAME, COMMAND) pairs, COMMAND's output framed as file
        NAME ('' for an empty frame: NAME exists)."""
        cap = limit + 1
        # the shell expands the globs; perl (Debian's perl-base is essential) reads every file in one
        # process, else the shell's loop forks a few processes a file: seconds a file on a system
        # under software emulation, where one read of the doctor's ~100 files took minutes
        script = ("t=$(mktemp /tmp/rtgauge-read.XXXXXX) || exit 1; trap 'rm -f \"$t\"' EXIT; "
                  "emit() { n=$(wc -c < \"$t\"); printf '\\036rtgauge-file %d %s\\n' $n \"$1\"; cat \"$t\"; }; "
                  f"set -- {paths}; if command -v perl >/dev/null 2>&1; then perl -e {shlex.quote(PERL_READ)} "
                  f"{cap} \"$@\"; else for f in \"$@\"; do [ -f \"$f\" ] && [ -r \"$f\" ] || continue; "
                  f"head -c {cap} \"$f\" > \"$t\" 2>/dev/null || continue; emit \"$f\"; done; fi; ")
        for name, command in extra:
            if command:
                script += f"{{ ( eval {shlex.quote(command)} ) </dev/null 2>/dev/null | head -c {cap} > \"$t\"; " \
                          f"emit {shlex.quote(name)}; }}; "
            else:
                script += f": > \"$t\"; emit {shlex.quote(name)}; "
        return parse_frames(await self._sh_bytes(script + "true"), limit)

    async def start_kept(self, argv, atexit: str | None = None) -> Kept:
        """Start argv(directory) on the target under keep.sh, in a fresh temporary
        directory, in a session of its own, for as long as this connection says so
        (a heartbeat a second): stop_kept() ends it; a lost connection ends it there
        within silence_s seconds. `atexit`: a shell script run there after it ends."""
        d = (await self._sh("mktemp -d /tmp/rtgauge.XXXXXX")).strip()
        if not d.startswith("/tmp/rtgauge."):
            raise RunFailed(f"mktemp -d gave {d!r} on {self.address}; check that /tmp is writable there.")
        qd = shlex.quote(d)
        await self._sh(f"cat > {qd}/keep.sh", input=KEEP.read_bytes())
        if atexit is not None:
            await self._sh(f"cat > {qd}/atexit", input=atexit.encode())
        cmd = " ".join(shlex.quote(x) for x in ["sh", f"{d}/keep.sh", d, str(self.silence_s), *argv(d)])
        proc = await self.conn.create_process(cmd, encoding=None)

        async def heartbeat() -> None:
            with contextlib.suppress(Exception):
                while True:
                    proc.stdin.write(b"\n")
                    await asyncio.sleep(1)

        kept = Kept(d, proc, asyncio.create_task(heartbeat(), name=HEARTBEAT))
        for _ in range(50):      # keep.sh writes the session id first
            pid = (await self._sh(f"cat {qd}/pid 2>/dev/null", check=False)).strip()
            if pid.isdigit():
                kept.pid = int(pid)
                break
            await asyncio.sleep(0.05)
        return kept

    def kept_running(self, kept: Kept) -> bool:
        return kept.proc.exit_status is None and kept.proc.exit_signal is None and self.conn is not None \
            and not kept.proc.is_closing()

    async def stop_kept(self, kept: Kept, files: tuple[str, ...] = ("log",)) -> dict[str, bytes]:
        """Stop a kept process (its whole session), wait for keep.sh to end (and its
        atexit), read `files` of its directory back and remove the directory."""
        kept.beat.cancel()
        qd = shlex.quote(kept.directory)
        try:
            with contextlib.suppress(Exception):
                kept.proc.stdin.write(b"stop\n")
                kept.proc.stdin.write_eof()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(kept.proc.wait(check=False), 15 * self.patience)
            names = " ".join(shlex.quote(f"{kept.directory}/{f}") for f in (*files, "status", "atexit.log"))
            got = await self.read_files(names)
            return {k.rsplit("/", 1)[1]: v for k, v in got.items()}
        finally:
            await self._remove(qd)

    async def stat_lines(self) -> bytes:
        """/proc/PID/stat of every process there (process accounting of loads)."""
        return await self._sh_bytes("cat /proc/[0-9]*/stat 2>/dev/null")

    async def _check(self) -> None:
        out = await self._sh("uname -m; uname -n; id -u; ulimit -r 2>/dev/null || echo 0", check=False)
        lines = [line.strip() for line in out.splitlines()]     # a host name may hold a space
        if len(lines) < 4:
            raise UserError(f"{self.address} does not run commands for this login ({out.strip() or 'no output'}); "
                            "log in with a user that has a POSIX shell.")
        self.machine, self.hostname, uid, rtprio = lines[:4]
        if uid != "0" and not (rtprio == "unlimited" or (rtprio.isdigit() and int(rtprio) >= 99)):
            raise UserError(f"{self.address}: user {self.address.user or '(from ssh config)'} is not root and may "
                            f"not use real-time priorities (rtprio limit {rtprio}); log in as root, or grant an "
                            "rtprio limit of 99 (limits.conf) and CAP_SYS_NICE.")

    async def run_engine(self, args: list[str], engine: Path | None = None,
                         time_limit_s: float | None = None) -> RemoteRun:
        """Run `rtgauge-engine ARGS` on the target and return its document. On
        cancellation (Ctrl-C) the engine is stopped, what it measured is kept in
        self.last_run, the directory removed, and the cancellation goes on."""
        if engine is None:
            engine = engines.build(engines.arch_for_machine(self.machine)).binary
        return await self._run_in_directory(lambda d: [f"{d}/rtgauge-engine", *args], time_limit_s, Path(engine))

    async def run_tool(self, command, time_limit_s: float | None = None) -> RemoteRun:
        """Run a program the target has (cyclictest) under the same guard, in the same
        way: command(result_path) is its command line, writing its JSON result to
        result_path, which comes back as RemoteRun.document."""
        def argv(d: str) -> list[str]:
            # the guard appends `--out DIR/doc.json`: they become sh's ignored $1 $2
            return ["sh", "-c", "exec " + " ".join(shlex.quote(x) for x in command(f"{d}/doc.json")), "sh"]
        return await self._run_in_directory(argv, time_limit_s, None)

    async def _run_in_directory(self, argv, time_limit_s: float | None, engine: Path | None) -> RemoteRun:
        d = (await self._sh("mktemp -d /tmp/rtgauge.XXXXXX")).strip()
        if not d.startswith("/tmp/rtgauge."):
            raise RunFailed(f"mktemp -d gave {d!r} on {self.address}; check that /tmp is writable there.")
        qd = shlex.quote(d)
        lost = False
        try:
            if engine is not None:
                await self._sh(f"cat > {qd}/rtgauge-engine && chmod 755 {qd}/rtgauge-engine",
                               input=Path(engine).read_bytes())
            await self._sh(f"cat > {qd}/guard.sh", input=GUARD.read_bytes())
            cmd = " ".join(shlex.quote(x) for x in ["sh", f"{d}/guard.sh", d, str(self.silence_s), *argv(d)])
            return await self._run_guarded(cmd, d, time_limit_s)
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError) as e:
            lost = True
            raise ConnectionLost(f"lost the connection to {self.address} ({getattr(e, 'reason', e) or type(e).__name__}); "
                            f"the engine there stops by itself within {self.silence_s} s.") from None
        finally:
            # also on Ctrl-C: _run_guarded stopped the engine and kept its document
            if not lost:
                await self._remove(qd)

    async def _remove(self, qd: str) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._sh(f"rm -rf {qd}", check=False), 10 * self.patience)

    async def _run_guarded(self, cmd: str, d: str, time_limit_s: float | None) -> RemoteRun:
        proc = await self.conn.create_process(cmd, encoding=None)

        async def heartbeat() -> None:
            with contextlib.suppress(Exception):   # a lost connection ends it; proc.wait() says so
                while True:
                    proc.stdin.write(b"\n")
                    await asyncio.sleep(1)

        beat = asyncio.create_task(heartbeat(), name=HEARTBEAT)
        try:
            try:
                await asyncio.wait_for(proc.wait(check=False), time_limit_s)
            except (asyncio.CancelledError, asyncio.TimeoutError) as stop:
                beat.cancel()
                proc.stdin.write(b"stop\n")
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(proc.wait(check=False), 10 * self.patience)
                self.last_run = await self._collect(proc, d)
                if isinstance(stop, asyncio.TimeoutError):
                    raise RunFailed(f"the engine on {self.address} ran past {time_limit_s} s and was stopped.") from None
                raise
        finally:
            beat.cancel()
        if proc.exit_status is None and proc.exit_signal is None:
            raise asyncssh.ConnectionLost("the session ended without an exit status")
        self.last_run = await self._collect(proc, d)
        return self.last_run

    async def _collect(self, proc, d: str) -> RemoteRun:
        """The document and stderr the guard left in d, length-framed (a document cannot
        forge the end of itself) and parsed as strictly as an import."""
        got = await self.read_files(f"{shlex.quote(d)}/doc.json {shlex.quote(d)}/err", limit=DOCUMENT_MAX)
        err = got.get(f"{d}/err", b"")[-TEXT_TAIL:].decode(errors="replace").strip()
        doc = None
        data = got.get(f"{d}/doc.json")
        if data is not None and data.strip():
            try:
                doc = parse_document(data, f"the document from {self.address}")
            except UserError as e:
                err = (err + "\n" + str(e)).strip()
        status = proc.exit_status if proc.exit_status is not None else -1
        return RemoteRun(doc, status, err, d)


def run_engine(target: str, args: list[str], engine: Path | None = None,
               time_limit_s: float | None = None) -> RemoteRun:
    """Synchronous form: connect, run one engine test, disconnect. On Ctrl-C the
    remote engine is stopped and its run returned (status 130, the document
    "interrupted": true), as the engine itself does locally."""
    t = SshTarget(parse(target))

    async def go() -> RemoteRun:
        async with t:
            return await t.run_engine(args, engine=engine, time_limit_s=time_limit_s)

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        if t.last_run is None:
            raise
        return t.last_run
