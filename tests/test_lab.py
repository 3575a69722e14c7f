"""`rtgauge lab run LAB.toml` for real: two OpenSSH servers in network namespaces of
their own (tests/sshlab.py, each with its own hostname) are the boards, a PostgreSQL
server (tests/pgserver.py) is the lab's shared database, and a labgrid coordinator and
exporter started here on loopback export the two boards as places. The lab run measures
both boards at once and files each run under its board; labgrid places are held for
the run and released after, also when the run is interrupted; the refusals come
before anything runs."""

from __future__ import annotations

from conftest import cli, rtgauge_popen
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import sshlab
from readiness import most, wait_for
from rtgauge.loads.base import keep_group_weight
from rtgauge.store import open_store
from test_target_ssh import engine_processes

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.shared, pytest.mark.skipif(sshlab.available() is not None, reason=sshlab.available() or ""),
              pytest.mark.postgres]

# a profile of one short latency job: the lab's machinery is under test here, not the engine
PROFILE = """\
name = "lab-tiny"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = {duration}
threads = 1
"""


def board_ip(lab: sshlab.Lab) -> str:
    return re.search(r"HostName (\S+)", (lab.home / ".ssh" / "config").read_text()).group(1)


@pytest.fixture(scope="module")
def boards():
    a = sshlab.start()
    try:
        b = sshlab.start()
    except BaseException:
        sshlab.stop(a)
        raise
    yield a, b
    sshlab.stop(b)
    sshlab.stop(a)


@pytest.fixture(scope="module")
def home(boards):
    """One user's ~/.ssh reaching both boards: by alias (board-a, board-b), by address
    (what a labgrid place's NetworkService gives), and a closed port (board-closed)."""
    root = Path(tempfile.mkdtemp(prefix="rtgauge-labhome-"))
    ssh = root / ".ssh"
    ssh.mkdir()
    config, known = [], []
    for tag, lab in zip("ab", boards):
        ip, key = board_ip(lab), lab.home / ".ssh" / "id_ed25519"
        proxy = f"ProxyCommand ip netns exec {lab.ns_client} nc %h %p"
        config.append(f"Host board-{tag} {ip}\n    HostName {ip}\n    User root\n    IdentityFile {key}\n"
                      f"    IdentitiesOnly yes\n    {proxy}\n")
        if tag == "a":
            config.append(f"Host board-closed\n    HostName {ip}\n    Port 2222\n    User root\n"
                          f"    IdentityFile {key}\n    {proxy}\n")
        known.append((lab.home / ".ssh" / "known_hosts").read_text())
    (ssh / "config").write_text("".join(config))
    (ssh / "known_hosts").write_text("".join(known))
    yield root
    import shutil
    shutil.rmtree(root, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Labgrid:
    """A labgrid coordinator and an exporter on loopback; the exporter exports each
    board's sshd as a NetworkService, and place-a / place-b match them."""

    def __init__(self, boards, root: Path):
        self.root = root
        self.address = f"127.0.0.1:{free_port()}"
        self.procs: list[subprocess.Popen] = []
        (root / "exporter.yaml").write_text("".join(
            f"board-{tag}:\n  NetworkService:\n    address: {board_ip(lab)}\n    username: root\n    port: 22\n"
            for tag, lab in zip("ab", boards)))
        self._start([str(BIN / "labgrid-coordinator"), "-l", self.address], "coordinator")
        self._wait_for(lambda: self.client("places", check=False).returncode == 0, "the coordinator")
        self._start([str(BIN / "labgrid-exporter"), "-c", self.address, "-n", "rack", "--hostname", "127.0.0.1",
                     str(root / "exporter.yaml")], "exporter")
        self._wait_for(lambda: self.client("resources").stdout.count("NetworkService") == 2, "the exporter")
        for tag in "ab":
            self.client("-p", f"place-{tag}", "create")
            self.client("-p", f"place-{tag}", "add-match", f"rack/board-{tag}/NetworkService")

    def _start(self, cmd: list[str], name: str) -> None:
        self.procs.append(subprocess.Popen(cmd, cwd=self.root, stdout=open(self.root / f"{name}.log", "w"),
                                           stderr=subprocess.STDOUT, start_new_session=True))
        # a session of its own (ended whole) weighs, where the scheduler groups by session,
        # as a program at the default nice: as the test's pass instead (a lab's server
        # is not this machine's work at all)
        keep_group_weight(self.procs[-1].pid)

    def _wait_for(self, ready, what: str) -> None:
        deadline = time.monotonic() + 30
        while not ready():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"{what} did not start: " + "".join(
                    p.read_text() for p in self.root.glob("*.log")))
            time.sleep(0.2)

    def client(self, *args: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        env = dict(os.environ, LG_COORDINATOR=self.address)
        if user:
            env["LG_USERNAME"] = user
        p = subprocess.run([str(BIN / "labgrid-client"), *args], capture_output=True, text=True, env=env, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError(f"labgrid-client {' '.join(args)}: {p.stdout}{p.stderr}")
        return p

    def holder(self, place: str) -> str | None:
        """Who holds the place, as labgrid's client shows it (None: nobody)."""
        m = re.search(r"^\s*acquired: (\S+)", self.client("-p", place, "show").stdout, re.M)
        return None if m is None or m.group(1) == "None" else m.group(1)

    def holders(self) -> dict[str, str | None]:
        """Who holds each place, in one look (one labgrid-client: a slow start under
        load does not put a run's end between two places' looks)."""
        out = self.client("-v", "places").stdout
        found: dict[str, str | None] = {}
        for block in re.split(r"^Place '", out, flags=re.M)[1:]:
            name = block.split("'", 1)[0]
            m = re.search(r"^\s*acquired: (\S+)", block, re.M)
            found[name] = None if m is None or m.group(1) == "None" else m.group(1)
        return found

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()


@pytest.fixture(scope="module")
def labgrid(boards):
    if not (BIN / "labgrid-coordinator").exists():
        pytest.skip("labgrid is not installed beside this Python: `pip install '.[lab]'` installs it (the lab extra)")
    root = Path(tempfile.mkdtemp(prefix="rtgauge-labgrid-"))
    lg = Labgrid(boards, root)
    yield lg
    lg.stop()
    import shutil
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def env(home):
    e = dict(os.environ, HOME=str(home), RTGAUGE_CACHE=os.environ.get("RTGAUGE_CACHE")
             or str(REPO / "build" / "cross"))
    e.pop("SSH_AUTH_SOCK", None)
    e.pop("LG_COORDINATOR", None)
    return e


@pytest.fixture
def db(postgres_server):
    return postgres_server.new_database()


def lab_file(tmp_path, targets: list[str], db: str | None, coordinator: str | None = None,
             duration: float = 1.0, extra: str = "") -> Path:
    (tmp_path / "tiny.toml").write_text(PROFILE.format(duration=duration))
    text = 'name = "rack"\nprofile = "tiny.toml"\n'
    if db:
        text += f'db = "{db}"\n'
    text += extra
    text += "targets = [" + ", ".join(f'"{t}"' for t in targets) + "]\n"
    if coordinator:
        text += f'[labgrid]\ncoordinator = "{coordinator}"\n'
    path = tmp_path / "lab.toml"
    path.write_text(text)
    return path


def lab_run(env, tmp_path, *args, timeout=300) -> subprocess.CompletedProcess:
    return cli(["lab", "run", *map(str, args)], env=env, cwd=tmp_path, timeout=timeout)


def stored_runs(db: str) -> list[dict]:
    with open_store(db) as store:
        return [store.get_run(r["id"], documents=False).to_dict() for r in reversed(store.list_runs())]


def test_two_targets_at_once_stored_in_one_database_and_reported_side_by_side(boards, env, db, tmp_path):
    a, b = boards
    p = lab_run(env, tmp_path, lab_file(tmp_path, ["ssh://board-a", "ssh://board-b"], db),
                "--report", tmp_path / "lab.html")
    assert p.returncode == 0, p.stdout + p.stderr
    runs = stored_runs(db)
    assert len(runs) == 2 and all(r["status"] == "complete" for r in runs)
    by_target = {r["system"]["target"]: r for r in runs}
    assert set(by_target) == {"ssh://board-a", "ssh://board-b"}
    # each run is filed under its own board's system, measured there
    assert by_target["ssh://board-a"]["hostname"] == a.hostname
    assert by_target["ssh://board-b"]["hostname"] == b.hostname != a.hostname
    assert runs[0]["system_id"] != runs[1]["system_id"]
    for r in runs:
        [m] = r["measurements"]
        assert m["ok"] and m["metrics"]["cycles"]["value"] + m["metrics"]["skipped"]["value"] \
            == pytest.approx(1000, abs=3)                       # 1 s at 1 kHz
    # at once: each run started before the other finished
    assert runs[0]["started_at"] < runs[1]["finished_at"] and runs[1]["started_at"] < runs[0]["finished_at"]
    # the report has both runs side by side, the terminal a summary per target
    html = (tmp_path / "lab.html").read_text()
    assert a.hostname in html and b.hostname in html
    for tag, r in (("a", by_target["ssh://board-a"]), ("b", by_target["ssh://board-b"])):
        assert f"[board-{tag}] Run {r['id']}: profile lab-tiny" in p.stdout
        assert re.search(rf"board-{tag} \(ssh://board-{tag}\): run {r['id']} on {r['hostname']}: complete", p.stdout)
    assert "is measuring on this machine" not in p.stdout      # two boards: neither run loads the other's
    for i, (tag, r) in enumerate((("a", by_target["ssh://board-a"]), ("b", by_target["ssh://board-b"])), 1):
        log = (tmp_path / "rtgauge-lab-rack-logs" / f"0{i}-board-{tag}.log").read_text()
        assert f"Run {r['id']}: profile lab-tiny" in log          # each board's own output, kept
    assert nothing_left_on(boards)


def test_a_failed_target_is_told_and_the_others_carry_on(boards, env, db, tmp_path):
    p = lab_run(env, tmp_path, lab_file(tmp_path, ["ssh://board-closed", "ssh://board-b"], db), "--no-report")
    assert p.returncode == 1, p.stdout + p.stderr
    [run] = stored_runs(db)
    assert run["status"] == "complete" and run["hostname"] == boards[1].hostname
    assert re.search(r"board-closed \(ssh://board-closed\): nothing stored; failed: cannot reach "
                     r"ssh://board-closed \(", p.stdout)
    assert re.search(r"^rtgauge: 1 of 2 targets failed: board-closed: cannot reach", p.stderr, re.M)
    assert "Traceback" not in p.stdout + p.stderr


def left_on(board: sshlab.Lab) -> list[int]:
    """Processes on the board but its sshd listener: the sessions, guards and engines
    of a run (the board's network namespace holds them all; /tmp is shared with
    others' tests, so its rtgauge.* directories cannot tell)."""
    pids = sshlab.sh("ip", "netns", "pids", board.ns_board, check=False).stdout.split()
    return [int(p) for p in pids if int(p) != board.sshd.pid]


def nothing_left_on(boards, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout       # an ended session's sshd child exits just after
    while any(left_on(b) for b in boards):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def engine_dirs(boards) -> list[Path]:
    """The directories of the engines running on the boards (one a board when both run)."""
    found = set()
    for board in boards:
        for pid in left_on(board):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0].endswith(b"/rtgauge-engine"):
                found.add(Path(argv[0].decode()).parent)
    return sorted(found)


def engine_pids(boards) -> list[int]:
    """The engines running on the boards now."""
    found = []
    for board in boards:
        for pid in left_on(board):
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if argv0.endswith(b"/rtgauge-engine"):
                found.append(pid)
    return found


MEASURED = 300      # cycles each board's engine has measured before the stop; the tests keep > 100


def both_measured(boards, p: subprocess.Popen) -> None:
    """Wait until the engine of each board has measured MEASURED cycles: its measuring
    thread (real-time, above the observer's FIFO 1) has slept that often, once a cycle."""
    wait_for(lambda: (lambda e: len(e) == 2 and all(most(pid, "switches", rt_above=1) >= MEASURED for pid in e))(
        engine_pids(boards)), f"{MEASURED} cycles measured by the engine on each board", timeout=120, proc=p)


def test_labgrid_places_are_held_for_the_run_and_released_after(boards, labgrid, env, db, tmp_path):
    # 15 s: beside `stress-ng --cpu 2` and the background pass, labgrid-client's answer
    # once came after both 8 s runs had ended
    lab = lab_file(tmp_path, ["labgrid:place-a", "labgrid:place-b"], db, labgrid.address, duration=15)
    p = rtgauge_popen("lab", "run", str(lab), "--no-report", env_full=env, cwd=tmp_path)
    try:
        wait_for(lambda: len(engine_dirs(boards)) == 2, "both engines running", timeout=120, proc=p)
        held = labgrid.holders()
        # the look fell inside the run: both engines still run after it (a loaded
        # machine can make labgrid-client's start outlast a short run)
        running_after = len(engine_dirs(boards)) == 2
        me = f"{socket.gethostname()}/{os.environ.get('LG_USERNAME') or 'root'}"
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out + err
    assert running_after, "both engines had ended by the time labgrid-client answered: the run is too short here"
    assert held == {"place-a": me, "place-b": me}, held
    assert labgrid.holders() == {"place-a": None, "place-b": None}, out + err
    runs = stored_runs(db)
    assert {r["hostname"] for r in runs} == {boards[0].hostname, boards[1].hostname}
    # the address came from each place's NetworkService
    assert {r["system"]["target"] for r in runs} == {f"ssh://root@{board_ip(x)}:22" for x in boards}
    assert all(r["status"] == "complete" for r in runs)
    assert "Released labgrid place place-a." in out and "Released labgrid place place-b." in out


def test_ctrl_c_stops_every_target_keeps_what_was_measured_and_releases_the_places(boards, labgrid, env, db,
                                                                                  tmp_path):
    lab = lab_file(tmp_path, ["labgrid:place-a", "labgrid:place-b"], db, labgrid.address, duration=60)
    p = rtgauge_popen("lab", "run", str(lab), "--report", str(tmp_path / "lab.html"), env_full=env,
                      cwd=tmp_path)
    try:
        dirs = wait_for(lambda: (lambda d: d if len(d) == 2 else None)(engine_dirs(boards)), "both engines running",
                        timeout=120, proc=p)
        both_measured(boards, p)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out + err
    assert all(engine_processes(str(d)) == [] and not d.exists() for d in dirs)
    assert nothing_left_on(boards)
    assert labgrid.holder("place-a") is None and labgrid.holder("place-b") is None
    runs = stored_runs(db)
    assert len(runs) == 2 and all(r["status"] == "interrupted" for r in runs)
    for r in runs:
        [m] = r["measurements"]
        # what ran before the stop is kept: each engine had measured MEASURED cycles by then
        assert m["interrupted"] and m["metrics"]["cycles"]["value"] > 100
    assert (tmp_path / "lab.html").exists() and "Traceback" not in out + err


@pytest.mark.parametrize("text, sentence", [
    ('profile = "tiny.toml"\ntargets = ["ssh://board-a"]\n', r"db is missing"),
    ('profile = "tiny.toml"\ndb = "/tmp/x.db"\ntargets = ["ssh://board-a"]\n', r"is not a PostgreSQL URL"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntargets = []\n', r"targets is missing or empty"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntargets = ["board-a"]\n', r"'board-a' is neither ssh://"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntargets = ["ssh://board-a", "ssh://board-a"]\n', r"is listed twice"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntargets = ["labgrid:"]\n', r"does not name a labgrid place"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntarget = ["ssh://board-a"]\n', r"unknown key 'target'"),
    ('profile = "nope.toml"\ndb = "{db}"\ntargets = ["ssh://board-a"]\n', r"profile '.*nope.toml' is neither"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntargets = ["ssh://board-a"]\n[labgrid]\nhost = "x"\n',
     r"\[labgrid\]: unknown key 'host'"),
    ('profile = "tiny.toml"\ndb = "{db}"\ntargets = [\n', r"is not valid TOML"),
])
def test_a_bad_lab_file_is_refused_before_anything_runs(env, db, tmp_path, text, sentence):
    (tmp_path / "tiny.toml").write_text(PROFILE.format(duration=1))
    (tmp_path / "lab.toml").write_text(text.replace("{db}", db))
    p = lab_run(env, tmp_path, tmp_path / "lab.toml", timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(sentence, lines[0]) and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == "" and stored_runs(db) == []


def test_an_unknown_place_is_refused(labgrid, env, db, tmp_path):
    p = lab_run(env, tmp_path, lab_file(tmp_path, ["labgrid:place-a", "labgrid:place-zz"], db, labgrid.address),
                timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert re.fullmatch(r"rtgauge: labgrid place place-zz does not exist at the coordinator 127\.0\.0\.1:\d+ "
                        r"\(places: place-a, place-b\); check the name with `labgrid-client places`\.\n", p.stderr)
    assert labgrid.holder("place-a") is None                   # acquired first, released on the refusal
    assert stored_runs(db) == []


def test_a_place_held_by_someone_else_is_refused(labgrid, env, db, tmp_path):
    labgrid.client("-p", "place-a", "acquire", user="alice")
    try:
        p = lab_run(env, tmp_path, lab_file(tmp_path, ["labgrid:place-b", "labgrid:place-a"], db, labgrid.address),
                    timeout=120)
        assert p.returncode == 2, p.stdout + p.stderr
        assert re.fullmatch(r"rtgauge: labgrid place place-a is already acquired by [^/\s]+/alice; wait until it "
                            r"is released, or ask them to release it\.\n", p.stderr)
        assert labgrid.holder("place-a").endswith("/alice")    # still theirs
        assert labgrid.holder("place-b") is None               # ours, released on the refusal
        assert stored_runs(db) == []
    finally:
        labgrid.client("-p", "place-a", "release", "--kick", user="alice", check=False)


def test_an_unreachable_coordinator_is_refused(env, db, tmp_path):
    p = lab_run(env, tmp_path, lab_file(tmp_path, ["labgrid:place-a"], db, f"127.0.0.1:{free_port()}"), timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert re.fullmatch(r"rtgauge: cannot reach the labgrid coordinator at 127\.0\.0\.1:\d+ \(.+\); start "
                        r"labgrid-coordinator there, or set \[labgrid\] coordinator in the lab file\.\n", p.stderr)
    assert stored_runs(db) == []


def test_a_place_that_is_also_listed_by_address_is_refused(boards, labgrid, env, db, tmp_path):
    p = lab_run(env, tmp_path, lab_file(tmp_path, ["labgrid:place-a", f"ssh://root@{board_ip(boards[0])}:22"], db,
                                        labgrid.address), timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert re.fullmatch(r"rtgauge: targets labgrid:place-a and root@[\d.]+:22 are both ssh://root@[\d.]+:22; a "
                        r"board is measured once a lab run, remove one of them\.\n", p.stderr)
    assert labgrid.holder("place-a") is None and stored_runs(db) == []


def test_a_killed_lab_process_stops_every_board_run(boards, env, db, tmp_path):
    """SIGKILL leaves the lab process no say: the kernel sends each board's run SIGTERM
    (PR_SET_PDEATHSIG), and each stops as on Ctrl-C, keeping what it measured."""
    lab = lab_file(tmp_path, ["ssh://board-a", "ssh://board-b"], db, duration=60)
    p = subprocess.Popen([sys.executable, "-m", "rtgauge", "lab", "run", str(lab), "--no-report"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    try:
        dirs = wait_for(lambda: (lambda d: d if len(d) == 2 else None)(engine_dirs(boards)), "both engines running",
                        timeout=120, proc=p)
        both_measured(boards, p)
        p.kill()
        p.wait(10)
        runs = wait_for(lambda: (lambda rs: rs if len(rs) == 2 and all(r["status"] != "running" for r in rs)
                                 else None)(stored_runs(db)), "both runs ended", timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert all(r["status"] == "interrupted" for r in runs), [(r["status"], r["note"]) for r in runs]
    for r in runs:
        [m] = r["measurements"]
        assert m["interrupted"] and m["metrics"]["cycles"]["value"] > 100      # kept; see the test above
    assert nothing_left_on(boards) and not any(d.exists() for d in dirs)
