"""Issue 34's readers and values (the attack's rows that are not one command and one
sentence): every reader bounded in bytes and in parsed elements before it parses
(import -, a directory of documents, another database, a board's document, measured
against the host's 512 MB), and rtgauge writes only into a database of its own (a
foreign `runs` table is refused before any table is created, SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import import_engine_latency, one_sentence, rtgauge  # noqa: E402
from pgserver import postgres_server  # noqa: E402,F401  (session fixture)

from rtgauge.store import validate  # noqa: E402

rtgauge = partial(rtgauge, timeout=900)
MIB = 1024**2
HOST_RSS_BOUND_MB = 512          # docs/design.md "Bounded reads"


@pytest.fixture(scope="module")
def real(tmp_path_factory, engine_bin):
    """A real engine latency document and a database holding it as run 1."""
    d = tmp_path_factory.mktemp("real")
    doc = import_engine_latency(engine_bin, d / "latency@idle.json", d / "base.db")
    return {"doc": doc, "db": d / "base.db"}


def tables(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    finally:
        con.close()


def application_id(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA application_id").fetchone()[0]
    finally:
        con.close()


# -- whose database ----------------------------------------------------------------------

@pytest.mark.parametrize("command", [["show"], ["show", "1"], ["import", "{doc}"], ["export", "1"]])
def test_a_foreign_runs_table_is_refused_before_any_table_is_created(real, tmp_path, command):
    """Another tool's SQLite file whose one table is named `runs`: every command refuses
    it, and the file keeps its one table (show made rtgauge's other seven in it)."""
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, job TEXT)")
    con.execute("INSERT INTO runs (job) VALUES ('nightly')")
    con.commit()
    con.close()
    argv = [a.replace("{doc}", str(real["doc"])) for a in command]
    assert "is not an rtgauge database" in one_sentence(rtgauge(*argv, "--db", str(db)))
    assert tables(db) == ["runs"]


def test_another_applications_mark_is_refused(real, tmp_path):
    db = tmp_path / "marked.db"
    db.write_bytes(real["db"].read_bytes())          # rtgauge's tables, but another application's id
    con = sqlite3.connect(db)
    con.execute("PRAGMA application_id = 1234")
    con.commit()
    con.close()
    assert "another application's mark" in one_sentence(rtgauge("show", "--db", str(db)))


def test_a_new_database_is_marked_and_one_made_before_the_mark_is_recognised(real, tmp_path):
    assert application_id(real["db"]) == 0x72746761           # made by this rtgauge: marked
    old = tmp_path / "old.db"
    old.write_bytes(real["db"].read_bytes())
    con = sqlite3.connect(old)
    con.execute("PRAGMA application_id = 0")                 # as the code before the mark made it
    con.commit()
    con.close()
    p = rtgauge("show", "1", "--db", str(old))
    assert p.returncode == 0, p.stderr
    assert application_id(old) == 0x72746761                 # recognised by its tables, marked now


def test_postgresql_refuses_a_foreign_runs_table_and_marks_its_own(postgres_server, real):
    import psycopg
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (id serial PRIMARY KEY, job text)")
    assert "is not an rtgauge database" in one_sentence(rtgauge("show", "--db", url))
    with psycopg.connect(url) as conn:
        names = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    assert names == ["runs"]
    ours = postgres_server.new_database()
    assert rtgauge("import", str(real["doc"]), "--db", ours).returncode == 0
    with psycopg.connect(ours, autocommit=True) as conn:
        assert conn.execute("SELECT obj_description('schema_version'::regclass, 'pg_class')").fetchone()[0] \
            == "rtgauge results store"
        conn.execute("COMMENT ON TABLE schema_version IS NULL")            # made before the mark
    assert rtgauge("show", "1", "--db", ours).returncode == 0
    with psycopg.connect(ours) as conn:
        assert conn.execute("SELECT obj_description('schema_version'::regclass, 'pg_class')").fetchone()[0] \
            == "rtgauge results store"


# -- bounded readers ----------------------------------------------------------------------

def test_import_from_dev_zero_stops_at_the_cap(tmp_path):
    db = tmp_path / "db.sqlite"
    with open("/dev/zero", "rb") as zero:
        p = subprocess.run([sys.executable, "-m", "rtgauge", "import", "-", "--db", str(db)], stdin=zero,
                           capture_output=True, text=True, cwd=ROOT, timeout=600,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "more than an import takes (64 MiB)" in one_sentence(p)
    assert not db.exists()


def test_import_with_stdin_closed_is_one_sentence(tmp_path):
    p = subprocess.run(f"{sys.executable} -m rtgauge import - --db {tmp_path}/db.sqlite <&-", shell=True,
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "standard input is closed" in one_sentence(p)


def padded(doc: Path, size: int) -> bytes:
    """The real document followed by whitespace up to size bytes (still the same JSON)."""
    data = doc.read_bytes()
    return data + b" " * (size - len(data))


def test_a_directory_is_bounded_in_total_bytes(real, tmp_path):
    """Five documents of 14 MiB each are each under an import file's bound, together
    over it: refused before the fifth is read, nothing stored."""
    d = tmp_path / "docs"
    d.mkdir()
    for i in range(5):
        (d / f"l{i}@idle.json").write_bytes(padded(real["doc"], 14 * MIB))
    db = tmp_path / "db.sqlite"
    assert "are more than an import takes together (64 MiB)" in one_sentence(rtgauge("import", str(d), "--db", str(db)))


def test_a_directory_is_bounded_in_parsed_elements(real, tmp_path):
    """Documents of a few MiB of empty arrays each (44 bytes of Python for 3 of text):
    the directory's parses share one budget, refused before the parse that would pass it."""
    d = tmp_path / "docs"
    d.mkdir()
    doc = json.loads(real["doc"].read_text())
    for i in range(12):
        doc["params"]["pad"] = "@"                      # replaced by the text below
        text = json.dumps(doc).replace('"@"', "[" + "[]," * (2 * MIB) + "[]]")
        (d / f"l{i}@idle.json").write_text(text)
    cost = validate.json_cost((d / "l0@idle.json").read_bytes())
    assert cost.memory < validate.IMPORT_PARSE_MAX < 12 * cost.memory
    p = rtgauge("import", str(d), "--db", str(tmp_path / "db.sqlite"))
    assert "with what was read before it" in one_sentence(p)


def test_a_database_run_larger_than_an_import_is_refused_before_it_is_read(real, tmp_path):
    big = tmp_path / "big.db"
    big.write_bytes(real["db"].read_bytes())
    con = sqlite3.connect(big)
    con.execute("UPDATE measurements SET error = ? WHERE id = 1", ("e" * (65 * MIB),))
    con.commit()
    con.close()
    p = rtgauge("import", str(big), "--db", str(tmp_path / "db.sqlite"))
    assert "run 1 holds 65 MiB of text" in one_sentence(p)


def test_a_document_with_a_lone_surrogate_in_its_file_name_is_refused(real, tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    os.symlink(real["doc"], os.fsencode(d) + b"/l\xff@idle.json")   # a name that is not UTF-8
    p = rtgauge("import", str(d), "--db", str(tmp_path / "db.sqlite"))
    assert "is not named as rtgauge names a document" in one_sentence(p)


@pytest.mark.parametrize("name", ["l\x1b[2J@idle.json", "l@idle\nfake.json"])
def test_a_control_character_in_a_document_name_is_refused(real, tmp_path, name):
    d = tmp_path / "docs"
    d.mkdir()
    (d / name).write_bytes(real["doc"].read_bytes())
    p = rtgauge("import", str(d), "--db", str(tmp_path / "db.sqlite"))
    assert "is not named as rtgauge names a document" in one_sentence(p)
    assert "\x1b" not in p.stderr


# -- a board's document at the cap ---------------------------------------------------------

HOSTILE_SHAPES = {
    # 64 MiB documents a board may send, each refused by its cost before it is parsed
    "empty-threads": lambda n: b'{"schema":1,"test":"latency","env":{"threads":[' + b"{}," * (n // 3) + b"{}]}}",
    "empty-arrays": lambda n: b'{"schema":1,"test":"latency","params":{"x":[' + b"[]," * (n // 3) + b"[]]}}",
    "one-key-objects": lambda n: b'{"schema":1,"test":"latency","params":{"x":[' + b'{"a":0},' * (n // 8)
    + b"0]}}",
    "wide-string": lambda n: b'{"schema":1,"test":"latency","error":"' + "\U0001F600".encode() * (n // 4) + b'"}',
}

MEASURE = """
import os, resource, sys
sys.path.insert(0, {root!r})
from rtgauge.plan import Job
from rtgauge.plan.execute import checked_document
data = open(sys.argv[1], "rb").read()
doc = checked_document(Job(name="lat", tool="engine", test="latency", condition="idle"), data,
                       "the board's document", 0, False)
print(doc.get("ok"), (doc.get("error") or "")[:300])
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("peak_kib", int(hwm.split()[1]))
"""


@pytest.mark.parametrize("shape", sorted(HOSTILE_SHAPES))
def test_a_hostile_document_at_the_cap_stays_under_the_host_bound(tmp_path, shape):
    """What a board's document goes through (checked_document: parse_document, the
    schema, the values), in a process of its own whose peak resident set it reads
    itself (VmHWM: this program's since exec; wait4's ru_maxrss holds the forking
    pytest worker's, which runs the command line in process and is hundreds of MB): a
    64 MiB document of 22 million empty objects took gigabytes."""
    path = tmp_path / "doc.json"
    data = HOSTILE_SHAPES[shape](validate.DOCUMENT_MAX - 100)
    assert validate.DOCUMENT_MAX - 200 <= len(data) <= validate.DOCUMENT_MAX
    path.write_bytes(data)
    del data
    proc = subprocess.Popen([sys.executable, "-c", MEASURE.format(root=str(ROOT)), str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out, err = proc.communicate(timeout=300)
    out, err = out.decode(), err.decode()
    assert proc.returncode == 0, err
    assert out.startswith("False") and "more than a document may hold" in out, out
    peak_kib = int(out.split("peak_kib")[1])
    assert peak_kib / 1024 < HOST_RSS_BOUND_MB, peak_kib


# -- the config file and the profile name: one sentence each ---------------------------------

@pytest.mark.parametrize("body,fragment", [
    ('db = "~nosuchuser34/x.db"\n', "names the home of a user"),
    ('db = "a\\u0000b"\n', "holds a control character"),
    ("a = " + "{a = " * 600 + "1" + "}" * 600 + "\n", "nests deeper"),
])
def test_a_hostile_config_file_is_one_sentence(tmp_path, body, fragment):
    cfg = tmp_path / "config.toml"
    cfg.write_text(body)
    p = subprocess.run([sys.executable, "-m", "rtgauge", "show"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT), RTGAUGE_CONFIG=str(cfg)))
    assert fragment in one_sentence(p)


def test_a_profile_name_over_255_bytes_is_one_sentence(tmp_path):
    p = rtgauge("run", "--profile", "p" * 300, "--db", str(tmp_path / "db.sqlite"), "--no-report")
    assert "nor a file path the system takes" in one_sentence(p)
