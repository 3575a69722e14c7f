"""A target reached over SSH: ssh://[user@]host[:port].

The connection goes through asyncssh with the user's OpenSSH setup: ~/.ssh/config
(Host aliases, HostName, User, Port, IdentityFile, ProxyCommand...), the agent
($SSH_AUTH_SOCK), the default keys and ~/.ssh/known_hosts (an unknown host key
is refused, as ssh does). On the target rtgauge

- checks the login may run real-time threads (root, or an rtprio limit >= 99),
- reads the machine (uname -m) and puts an engine built for it (engines.build)
  into a fresh temporary directory (mktemp -d), with guard.sh: the engine is sent
  once and kept there in the login's cache (~/.cache/rtgauge/target-engines/SHA256,
  the three sent last), and later jobs and connections copy it from there when its
  copy's SHA-256 is the engine's (stage()),
- runs a test under guard.sh, which stops the engine when rtgauge stops, says
  "stop" (Ctrl-C), or falls silent (a connection lost without a word): the
  heartbeat is a line a second, the guard waits SILENCE_S seconds,
- reads the document back and removes the directory (one command).

Only the commands of a POSIX shell with cat, mktemp, chmod, rm, date, sleep,
kill and uname are needed there (no Python, no sftp): a BusyBox board will do
(without sha256sum, the engine is sent every time).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
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
HEARTBEAT = Path(__file__).with_name("heartbeat.sh")   # listen and watch: sent first with either


def script_text(script: Path) -> bytes:
    """A script to stage there: heartbeat.sh's functions, then the script."""
    return HEARTBEAT.read_bytes() + b"\n" + script.read_bytes()
FRAME = b"\x1ertgauge-file "   # starts each file in a framed read (read_files), then "SIZE NAME" and a newline
# What one read from a target may bring (all files together), and how many files: the
# host's memory stays bounded whatever the board holds (docs/design.md).
TRANSFER_MAX = 96 * 1024**2
FRAMES_MAX = 100_000
# read_files' loop in one process where the target has perl: each readable regular file,
# cut at CAP bytes, framed as the shell's loop frames it; then the N (NAME, FILE) pairs
# after CAP and N: FILE (a command's output, or '' for none) framed as NAME
PERL_READ = r"""binmode STDOUT; my $cap = shift; my @x = splice(@ARGV, 0, 2 * shift);
sub slurp { my ($f) = @_; open(my $h, "<", $f) or return undef; binmode $h; my ($b, $n) = ("", 1);
  while ($n && length($b) < $cap) { my $k = $cap - length($b); $n = read($h, $b, $k < 65536 ? $k : 65536, length($b)); }
  close $h; return defined $n ? $b : undef; }
for my $f (@ARGV) { next unless -f $f && -r _; my $b = slurp($f); next unless defined $b;
  print "\036rtgauge-file ", length($b), " $f\n", $b; }
while (@x) { my ($name, $f) = splice(@x, 0, 2); my $b = $f eq "" ? "" : slurp($f); $b = "" unless defined $b;
  print "\036rtgauge-file ", length($b), " $name\n", $b; }"""
TEXT_TAIL = 64 * 1024      # the end of a tool's stderr kept
# The engines a target was sent, kept there by content (their SHA-256) for the jobs and
# connections after: a job on a system under software emulation spent seconds receiving
# the same engine again. Only the newest CACHE_KEEP are kept.
TARGET_CACHE = "${XDG_CACHE_HOME:-$HOME/.cache}/rtgauge/target-engines"
CACHE_KEEP = 3
# (Each process there counts: a fork and an exec take a tenth of a second under software
# emulation.) A job's directory there with a script from stdin as $1 (guard.sh, keep.sh) and, when
# the cache holds a copy whose SHA-256 is $2, the engine copied from it into the directory
# and checked there (the copy is what runs: nothing in the cache can change it after its
# check). Prints the directory, then "cached" when the engine is in place.
STAGE = r"""d=$(mktemp -d /tmp/rtgauge.XXXXXX) || exit 1
echo "$d"
cat > "$d/$1" || { rm -rf "$d"; exit 1; }
[ -n "$2" ] && [ -n "$HOME$XDG_CACHE_HOME" ] || exit 0
f="%(cache)s/$2"
[ -f "$f" ] && cp "$f" "$d/rtgauge-engine" 2>/dev/null || exit 0
h=$(sha256sum "$d/rtgauge-engine" 2>/dev/null)
if [ "${h%%%% *}" = "$2" ] && { [ -x "$d/rtgauge-engine" ] || chmod 755 "$d/rtgauge-engine"; }; then
    echo cached
else
    rm -f "$d/rtgauge-engine"
fi
exit 0""" % {"cache": TARGET_CACHE}
# The engine from stdin into DIR ($1), then a copy of it into the cache as $2 (its
# SHA-256), written aside, checked and renamed (a reader never sees half of it), the oldest
# beyond CACHE_KEEP removed. A cache that cannot be written (a read-only home, no
# sha256sum) is no cache: the engine is sent every time.
SEND = r"""cat > "$1/rtgauge-engine" && chmod 755 "$1/rtgauge-engine" || exit 1
command -v sha256sum >/dev/null 2>&1 && [ -n "$HOME$XDG_CACHE_HOME" ] || exit 0
c="%(cache)s"
{ mkdir -p "$c" && chmod 700 "$c" && cp "$1/rtgauge-engine" "$c/.new.$$" &&
  h=$(sha256sum "$c/.new.$$") && [ "${h%%%% *}" = "$2" ] && mv -f "$c/.new.$$" "$c/$2"; } 2>/dev/null
rm -f "$c/.new.$$" 2>/dev/null
ls -t "$c" 2>/dev/null | grep -E '^[0-9a-f]{64}$' | sed '1,%(keep)dd' | while IFS= read -r x; do rm -f "$c/$x"; done
exit 0""" % {"cache": TARGET_CACHE, "keep": CACHE_KEEP}


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
                         limit: int = FILE_READ_MAX, then: str = "") -> dict[str, bytes]:
        """Many files of the target in one command: `paths` is a list of paths and
        shell globs (expanded there); the readable regular files come back by path,
        byte for byte, each length-framed (parse_frames) and cut at `limit` + 1 bytes
        there (a larger file is left out). `extra`: (NAME, COMMAND) pairs, COMMAND's output framed as file
        NAME ('' for an empty frame: NAME exists). `then`: a shell command run after
        the read wrote everything out (not when it failed), its output discarded (the
        removal of what was read)."""
        cap = limit + 1
        # the shell expands the globs; perl (Debian's perl-base is essential) reads every file in one
        # process, else the shell's loop forks a few processes a file: seconds a file on a system
        # under software emulation, where one read of the doctor's ~100 files took minutes. With
        # perl, a command's output goes to a file of a temporary directory, which perl frames
        # (no head, wc and cat a command: each process there costs a tenth of a second under emulation).
        outputs, pairs = "", []
        for i, (name, command) in enumerate(extra):
            if command:
                outputs += f"( eval {shlex.quote(command)} ) </dev/null >\"$t/{i}\" 2>/dev/null; "
            pairs += [shlex.quote(name), f"\"$t/{i}\"" if command else "''"]
        perl = (f"perl -e {shlex.quote(PERL_READ)} {cap} {len(extra)} {' '.join(pairs)} \"$@\"; ")
        if extra:
            perl = ("t=$(mktemp -d /tmp/rtgauge-read.XXXXXX) || exit 1; trap 'rm -rf \"$t\"' EXIT; "
                    + outputs + perl)
        loop = ("t=$(mktemp /tmp/rtgauge-read.XXXXXX) || exit 1; trap 'rm -f \"$t\"' EXIT; "
                "emit() { n=$(wc -c < \"$t\"); printf '\\036rtgauge-file %d %s\\n' $n \"$1\"; cat \"$t\"; }; "
                f"for f in \"$@\"; do [ -f \"$f\" ] && [ -r \"$f\" ] || continue; "
                f"head -c {cap} \"$f\" > \"$t\" 2>/dev/null || continue; emit \"$f\"; done; ")
        for name, command in extra:
            if command:
                loop += f"{{ ( eval {shlex.quote(command)} ) </dev/null 2>/dev/null | head -c {cap} > \"$t\"; " \
                        f"emit {shlex.quote(name)}; }}; "
            else:
                loop += f": > \"$t\"; emit {shlex.quote(name)}; "
        script = f"set -- {paths}; if command -v perl >/dev/null 2>&1; then {perl}else {loop}fi; "
        if then:
            # only once everything was written out: a read cut short (the connection lost:
            # perl's write fails) leaves what it read there, where the next look finds it
            script += f"[ $? -eq 0 ] && {{ {then} ; }} >/dev/null 2>&1; "
        return parse_frames(await self._sh_bytes(script + "true"), limit)

    async def start_kept(self, argv, atexit: str | None = None) -> Kept:
        """Start argv(directory) on the target under keep.sh, in a fresh temporary
        directory, in a session of its own, for as long as this connection says so
        (a heartbeat a second): stop_kept() ends it; a lost connection ends it there
        within silence_s seconds. `atexit`: a shell script run there after it ends."""
        d, _ = await self.stage(None, KEEP, "keep.sh")
        qd = shlex.quote(d)
        try:
            if atexit is not None:
                await self._sh(f"cat > {qd}/atexit", input=atexit.encode())
            cmd = " ".join(shlex.quote(x) for x in ["sh", f"{d}/keep.sh", d, str(self.silence_s), *argv(d)])
            proc = await self.conn.create_process(cmd, encoding=None)
        except BaseException:
            await self._remove(qd)
            raise

        async def heartbeat() -> None:
            with contextlib.suppress(Exception):
                while True:
                    proc.stdin.write(b"\n")
                    await asyncio.sleep(1)

        kept = Kept(d, proc, asyncio.create_task(heartbeat(), name=HEARTBEAT))
        # keep.sh says the session id first, on its output (nothing else comes there)
        with contextlib.suppress(asyncio.TimeoutError, asyncssh.Error, OSError):
            pid = (await asyncio.wait_for(proc.stdout.readline(), 30 * self.patience)).strip()
            if pid.isdigit():
                kept.pid = int(pid)
        return kept

    def kept_running(self, kept: Kept) -> bool:
        return kept.proc.exit_status is None and kept.proc.exit_signal is None and self.conn is not None \
            and not kept.proc.is_closing()

    async def stop_kept(self, kept: Kept, files: tuple[str, ...] = ("log",)) -> dict[str, bytes]:
        """Stop a kept process (its whole session), wait for keep.sh to end (and its
        atexit), read `files` of its directory back and remove the directory."""
        kept.beat.cancel()
        qd = shlex.quote(kept.directory)
        removed = False
        try:
            with contextlib.suppress(Exception):
                kept.proc.stdin.write(b"stop\n")
                kept.proc.stdin.write_eof()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(kept.proc.wait(check=False), 15 * self.patience)
            names = " ".join(shlex.quote(f"{kept.directory}/{f}") for f in (*files, "status", "atexit.log"))
            got = await self.read_files(names, then=f"rm -rf {qd}")     # read, then removed
            removed = True
            return {k.rsplit("/", 1)[1]: v for k, v in got.items()}
        finally:
            if not removed:
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

    async def run_tool(self, command, time_limit_s: float | None = None, readable=None) -> RemoteRun:
        """Run a program the target has (cyclictest) under the same guard, in the same
        way: command(result_path) is its command line, writing its JSON result to
        result_path, which comes back as RemoteRun.document; readable(bytes) -> bytes
        makes the tool's own file strict JSON first (cyclictest's nan of a thread
        without a cycle). What it prints is not read (cyclictest's histogram: 20,000 lines)."""
        def argv(d: str) -> list[str]:
            # the guard appends `--out DIR/doc.json`: they become sh's ignored $1 $2
            return ["sh", "-c", "exec " + " ".join(shlex.quote(x) for x in command(f"{d}/doc.json")) + " >/dev/null",
                    "sh"]
        return await self._run_in_directory(argv, time_limit_s, None, readable)

    async def stage(self, engine: Path | None, script: Path = GUARD, name: str = "guard.sh") -> tuple[str, bool]:
        """A job's fresh directory there with `script` (guard.sh) as `name` and, when
        `engine` is given, the engine: copied from the target's cache when a copy there
        has the engine's SHA-256 (checked on the copy that will run), else sent and kept
        in the cache. One command, two when the engine is sent. Returns the directory
        and whether the engine came from the cache."""
        digest = file_sha256(engine) if engine is not None else ""
        try:
            out = await self._sh(f"set -- {shlex.quote(name)} {digest}\n{STAGE}", input=script_text(script))
        except ConnectionLost:
            raise
        except RunFailed:
            out = ""
        lines = out.split()
        d = lines[0] if lines else ""
        if not re.fullmatch(r"/tmp/rtgauge\.[A-Za-z0-9]+", d):
            raise RunFailed(f"could not make a directory with mktemp -d in /tmp on {self.address} "
                            f"({out.strip()[:80] or 'it failed'}); check that /tmp is writable there.")
        cached = lines[1:2] == ["cached"]
        if engine is not None and not cached:
            try:
                await self._sh(f"set -- {d} {digest}\n{SEND}", input=Path(engine).read_bytes())
            except BaseException:
                await self._remove(shlex.quote(d))
                raise
        return d, cached

    async def _run_in_directory(self, argv, time_limit_s: float | None, engine: Path | None,
                                readable=None) -> RemoteRun:
        d, _ = await self.stage(engine)
        qd = shlex.quote(d)
        lost = removed = False
        try:
            cmd = " ".join(shlex.quote(x) for x in ["sh", f"{d}/guard.sh", d, str(self.silence_s), *argv(d)])
            run = await self._run_guarded(cmd, d, time_limit_s, readable)
            removed = True               # the read of its document removed it (_collect)
            return run
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError) as e:
            lost = True
            raise ConnectionLost(f"lost the connection to {self.address} ({getattr(e, 'reason', e) or type(e).__name__}); "
                            f"the engine there stops by itself within {self.silence_s} s.") from None
        finally:
            # also on Ctrl-C: _run_guarded stopped the engine and kept its document
            if not lost and not removed:
                await self._remove(qd)

    async def _remove(self, qd: str) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._sh(f"rm -rf {qd}", check=False), 10 * self.patience)

    async def _run_guarded(self, cmd: str, d: str, time_limit_s: float | None, readable=None) -> RemoteRun:
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
                self.last_run = await self._collect(proc, d, readable)
                if isinstance(stop, asyncio.TimeoutError):
                    raise RunFailed(f"the engine on {self.address} ran past {time_limit_s} s and was stopped.") from None
                raise
        finally:
            beat.cancel()
        if proc.exit_status is None and proc.exit_signal is None:
            raise asyncssh.ConnectionLost("the session ended without an exit status")
        self.last_run = await self._collect(proc, d, readable, remove=True)
        return self.last_run

    async def _collect(self, proc, d: str, readable=None, remove: bool = False) -> RemoteRun:
        """The document and stderr the guard left in d, length-framed (a document cannot
        forge the end of itself) and parsed as strictly as an import; `remove`: d is
        removed by the same command once read."""
        got = await self.read_files(f"{shlex.quote(d)}/doc.json {shlex.quote(d)}/err", limit=DOCUMENT_MAX,
                                    then=f"rm -rf {shlex.quote(d)}" if remove else "")
        err = got.get(f"{d}/err", b"")[-TEXT_TAIL:].decode(errors="replace").strip()
        doc = None
        data = got.get(f"{d}/doc.json")
        if data is not None and data.strip():
            try:
                doc = parse_document(readable(data) if readable else data, f"the document from {self.address}")
            except UserError as e:
                err = (err + "\n" + str(e)).strip()
        status = proc.exit_status if proc.exit_status is not None else -1
        return RemoteRun(doc, status, err, d)


_digests: dict[tuple, str] = {}


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, remembered while its size and modification time stay."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _digests:
        _digests[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _digests[key]


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
