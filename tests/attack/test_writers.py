"""Every file rtgauge or its engine writes goes through one writer (rtgauge/safefile.py,
engine/src/output.c), so every -o-like option is walked here with the same hostile
table: a symbolic link planted at the name (pointing at a victim), a FIFO, a device node
(a /dev/null made with mknod in the test's directory, never the real one), a directory,
and the two stream names /dev/stdout and -.

A refused name: a non-zero exit, one sentence naming what is there, the victim and the
node untouched (still a link, a FIFO, a device, a directory), no temporary file left,
nothing stored. A stream name: the output on standard output, /dev/stdout still the link
it is, no file named - created."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# kind of name -> the clause the sentence must carry
REFUSED = {"link": "symbolic link", "fifo": "FIFO", "device": "device", "directory": "directory"}
STREAMS = ("/dev/stdout", "-")


def plant(kind: str, tmp: Path) -> str:
    """The name an option is given, with `kind` planted there."""
    target = tmp / "out.file"
    if kind == "link":
        target.symlink_to(tmp / "victim")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 3))     # a /dev/null of our own
    elif kind == "directory":
        target.mkdir()
    else:
        return kind
    return str(target)


def kind_of(path: Path) -> str:
    mode = os.lstat(path).st_mode
    return ("link" if stat.S_ISLNK(mode) else "fifo" if stat.S_ISFIFO(mode) else
            "device" if stat.S_ISCHR(mode) else "directory" if stat.S_ISDIR(mode) else "file")


PROFILE = """name = "writers"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
policy = "other"
duration-s = 0.2
{extra}"""

LAB = 'name = "w"\nprofile = "quick"\ndb = "postgresql://u@127.0.0.1:1/db"\ntargets = ["ssh://b"]\n'

# id -> (argv with {out}, {db}, {profile}, {lab}; what standard output starts with or holds for a stream)
PY_WRITERS = {
    "report -o": (["report", "1", "--db", "{db}", "-o", "{out}"], "<!DOCTYPE html"),
    "export -o": (["export", "1", "--db", "{db}", "-o", "{out}"], '"rtgauge_export"'),
    "export --format cyclictest -o": (["export", "1", "--db", "{db}", "--format", "cyclictest", "-o", "{out}"],
                                      "# rtgauge measurement"),
    "compare -o": (["compare", "1", "2", "--db", "{db}", "-o", "{out}"], "<!DOCTYPE html"),
    "compare --junit": (["compare", "1", "2", "--db", "{db}", "--fail-on", "max_latency>+20%", "--junit", "{out}"],
                        "<?xml"),
    "run --report": (["run", "--profile", "{profile}", "--db", "{db}", "--report", "{out}"], None),
    "run --junit": (["run", "--profile", "{profile}", "--db", "{db}", "--no-report", "--junit", "{out}"], None),
    "run --run-id-file": (["run", "--profile", "{profile}", "--db", "{db}", "--no-report", "--run-id-file", "{out}"],
                          None),
    "run --metrics-file": (["run", "--profile", "{profile}", "--db", "{db}", "--no-report", "--metrics-file",
                            "{out}"], None),
    "run, a profile's samples =": (["run", "--profile", "{samples_profile}", "--db", "{db}", "--no-report"], None),
    "lab run --junit": (["lab", "run", "{lab}", "--junit", "{out}"], None),
    "lab run --report": (["lab", "run", "{lab}", "--report", "{out}"], None),
}
ENGINE_WRITERS = {"--out": "{", "--status": '{"window"', "--samples": "thread,cycle"}


@pytest.fixture(autouse=True)
def stream_links_kept():
    """A regression of the rule would replace the machine's /dev/stdout (as root) with a
    file: put the link back at once and fail the test that did it."""
    links = {p: os.readlink(p) for p in ("/dev/stdout", "/dev/stderr") if os.path.islink(p)}
    yield
    broken = [p for p, to in links.items() if not os.path.islink(p)]
    for p in broken:
        with contextlib.suppress(OSError):
            if os.path.lexists(p) and stat.S_ISREG(os.lstat(p).st_mode):
                os.unlink(p)
            os.symlink(links[p], p)
    assert not broken, f"{', '.join(broken)} was replaced (put back as a link)"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, engine_bin):
    """A database of two real runs (two engine documents, imported)."""
    d = tmp_path_factory.mktemp("writers")
    db = d / "base.db"
    for i in (1, 2):            # one name, so the two runs hold the same job (lat@idle)
        (d / str(i)).mkdir()
        doc = d / str(i) / "lat.json"
        subprocess.run([engine_bin, "latency", "--duration-s", "0.2", "--policy", "other", "--out", str(doc)],
                       check=True, capture_output=True, timeout=60)
        p = cli(["import", str(doc), "--db", str(db)], d)
        assert p.returncode == 0, p.stderr
    return db


def cli(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    from conftest import rtgauge
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return rtgauge(*argv, env_full=env, cwd=cwd, timeout=timeout, errors="replace")


def runs_in(db: Path) -> int:
    import sqlite3
    if not db.exists():
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def setting(tmp: Path, two_runs: Path, out: str) -> dict:
    db = tmp / "db.sqlite"
    db.write_bytes(two_runs.read_bytes())
    (tmp / "victim").write_text("untouched")
    (tmp / "p.toml").write_text(PROFILE.format(extra=""))
    (tmp / "s.toml").write_text(PROFILE.format(extra=f'samples = "{out}"\n'))
    (tmp / "lab.toml").write_text(LAB)
    return {"{db}": str(db), "{profile}": str(tmp / "p.toml"), "{samples_profile}": str(tmp / "s.toml"),
            "{lab}": str(tmp / "lab.toml"), "{out}": out}


def expand(argv: list[str], subst: dict) -> list[str]:
    out = []
    for a in argv:
        for k, v in subst.items():
            a = a.replace(k, v)
        out.append(a)
    return out


def assert_refused(p: subprocess.CompletedProcess, kind: str, tmp: Path, out: str) -> None:
    text = p.stdout + p.stderr
    assert "Traceback" not in text, text
    assert p.returncode != 0, text
    lines = [line for line in p.stderr.strip().splitlines() if line.startswith(("rtgauge:", "rtgauge-engine:"))]
    assert len(lines) == 1 and REFUSED[kind] in lines[0], p.stderr
    assert (tmp / "victim").read_text() == "untouched"
    assert kind_of(Path(out)) == kind, "the planted name was replaced"
    assert not [f for f in os.listdir(tmp) if f.endswith(".tmp")], "a temporary file was left"


@pytest.mark.parametrize("kind", list(REFUSED))
@pytest.mark.parametrize("writer", list(PY_WRITERS))
def test_every_rtgauge_writer_refuses_what_is_not_a_regular_file(writer, kind, tmp_path, two_runs):
    out = plant(kind, tmp_path)
    subst = setting(tmp_path, two_runs, out)
    argv, _ = PY_WRITERS[writer]
    before = runs_in(tmp_path / "db.sqlite")
    p = cli(expand(argv, subst), tmp_path)
    assert_refused(p, kind, tmp_path, out)
    assert p.returncode == 2, p.stderr                   # refused as bad input, before any work
    assert runs_in(tmp_path / "db.sqlite") == before     # nothing measured or stored


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("writer", [w for w, (_, marker) in PY_WRITERS.items() if marker])
def test_a_stream_name_writes_to_the_stream(writer, name, tmp_path, two_runs):
    subst = setting(tmp_path, two_runs, name)
    argv, marker = PY_WRITERS[writer]
    p = cli(expand(argv, subst), tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode in (0, 3, 4), p.stderr          # a gate may trip; the file is written all the same
    assert marker in p.stdout, p.stdout[:300]
    assert not (tmp_path / "-").exists()
    assert Path("/dev/stdout").is_symlink()


def test_a_regular_file_is_replaced_whole_and_keeps_no_more_permission(tmp_path, two_runs):
    subst = setting(tmp_path, two_runs, str(tmp_path / "r.html"))
    out = tmp_path / "r.html"
    out.write_text("previous")
    out.chmod(0o600)
    other = tmp_path / "hardlink"
    os.link(out, other)                 # another name of the previous file keeps its content
    p = cli(expand(PY_WRITERS["report -o"][0], subst), tmp_path)
    assert p.returncode == 0, p.stderr
    assert out.read_text().startswith("<!DOCTYPE html") and other.read_text() == "previous"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", list(REFUSED))
@pytest.mark.parametrize("option", list(ENGINE_WRITERS))
def test_every_engine_writer_refuses_what_is_not_a_regular_file(option, kind, tmp_path, engine_bin):
    out = plant(kind, tmp_path)
    (tmp_path / "victim").write_text("untouched")
    doc = tmp_path / "doc.json"
    extra = [] if option == "--out" else ["--out", str(doc)]
    p = subprocess.run([engine_bin, "latency", "--duration-s", "0.05", "--policy", "other", option, out, *extra],
                       capture_output=True, text=True, timeout=60)
    assert_refused(p, kind, tmp_path, out)
    assert p.returncode == 1
    assert f"cannot write {option}" in p.stderr


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("option", list(ENGINE_WRITERS))
def test_an_engine_stream_name_writes_to_the_stream(option, name, tmp_path, engine_bin):
    extra = [] if option == "--out" else ["--out", str(tmp_path / "doc.json")]
    p = subprocess.run([engine_bin, "latency", "--duration-s", "0.3", "--window-s", "0.1", "--policy", "other",
                        option, name, *extra], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(ENGINE_WRITERS[option]), p.stdout[:200]
    assert not (tmp_path / "-").exists() and Path("/dev/stdout").is_symlink()


def test_the_engine_renames_its_files_in_and_never_truncates_in_place(tmp_path, engine_bin):
    """--out appears whole at the end; --samples and --status are new files from the
    start: another name of the previous file keeps the previous content."""
    names = {opt: tmp_path / opt.strip("-") for opt in ENGINE_WRITERS}
    for opt, path in names.items():
        path.write_text("previous")
        os.link(path, tmp_path / f"{path.name}.old")
    args = [a for opt, path in names.items() for a in (opt, str(path))]
    p = subprocess.run([engine_bin, "latency", "--duration-s", "0.3", "--window-s", "0.1", "--policy", "other",
                        *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for opt, path in names.items():
        assert path.read_text().startswith(ENGINE_WRITERS[opt])
        assert (tmp_path / f"{path.name}.old").read_text() == "previous"
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_junit_says_what_the_exit_status_says_for_an_interrupted_candidate(tmp_path, two_runs, engine_bin):
    """A candidate measured until Ctrl-C (a real engine stopped by SIGINT once its first
    window is out) makes compare exit 5; its JUnit file passes nothing."""
    status, doc = tmp_path / "status.jsonl", tmp_path / "lat.json"
    proc = subprocess.Popen([engine_bin, "latency", "--duration-s", "30", "--window-s", "0.1", "--policy", "other",
                             "--status", str(status), "--out", str(doc)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        import time
        deadline = time.monotonic() + 30
        while not (status.exists() and status.read_text().count("\n") >= 1):   # measuring: a window is out
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(2)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    db = tmp_path / "db.sqlite"
    db.write_bytes(two_runs.read_bytes())
    p = cli(["import", str(doc), "--db", str(db)], tmp_path)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "gate.xml"
    p = cli(["compare", "1", "3", "--db", str(db), "--fail-on", "max_latency>+1000%", "--junit", str(out)], tmp_path)
    assert p.returncode == 5, p.stderr
    from test_run_gates import junit      # a real XML parser and the common JUnit schema
    root = junit(out)
    cases = list(root.iter("testcase"))
    assert cases and all(c.find("failure") is not None or c.find("error") is not None for c in cases)
    assert int(root.get("errors")) >= 1
    # the same gate on two complete runs passes, so the check above can tell them apart
    p = cli(["compare", "1", "2", "--db", str(db), "--fail-on", "max_latency>+1000%", "--junit", str(out)], tmp_path)
    assert p.returncode in (0, 4), p.stderr
    if p.returncode == 0:
        assert all(c.find("failure") is None and c.find("error") is None for c in junit(out).iter("testcase"))


@pytest.mark.parametrize("argv", [["export", "1"], ["report", "1", "-o", "-"], ["show", "1"]],
                         ids=["export", "report -o -", "show"])
def test_standard_output_on_a_full_device_is_one_sentence(argv, tmp_path, two_runs):
    """`> /dev/full` (the real one, opened here for writing: it takes nothing)."""
    import sys
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "rtgauge", *argv, "--db", str(two_runs)], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr
    assert p.returncode in (1, 2) and "No space left on device" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_no_lock_file_beside_a_database_that_is_a_device(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    p = cli(["show", "--db", str(dev)], tmp_path)
    assert "Traceback" not in p.stderr and p.returncode == 2 and "not a database file" in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["null"]            # no null.lock, no null-journal
