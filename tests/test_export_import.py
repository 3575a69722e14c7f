"""`rtgauge export` and `rtgauge import`: a run goes to another machine and back
unchanged; engine documents from a board without Python become a run."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from rtgauge.store import open_store
from test_report_builders import HOSTILE, RATED_N, full_run_documents, store_run


def rtgauge(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True, timeout=120)


def comparable(run: dict) -> list:
    return [{k: m[k] for k in ("name", "tool", "test", "condition", "reference", "ok", "params", "env", "metrics",
                               "verdicts", "document", "load", "duration_s")} for m in run["measurements"]]


def test_json_export_imports_unchanged_into_another_database(tmp_path):
    src, dst = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    run_id = store_run(src, full_run_documents())
    out = tmp_path / "run.json"
    p = rtgauge("export", str(run_id), "--db", src, "--format", "json", "-o", str(out))
    assert p.returncode == 0, p.stderr
    p = rtgauge("import", str(out), "--db", dst)
    assert p.returncode == 0, p.stderr
    with open_store(src) as a, open_store(dst) as b:
        original, imported = a.get_run(run_id), b.get_run(b.latest_run_id())
    assert comparable(imported) == comparable(original)
    # the machine id leaves the machine hashed (an older run stored it raw)
    from rtgauge.owner import hash_machine_id
    assert imported["system"]["machine_id"] == hash_machine_id(original["system"]["machine_id"]) != \
        original["system"]["machine_id"]
    assert f'"machine_id": "{original["system"]["machine_id"]}"' not in out.read_text()
    assert dict(imported["system"], machine_id=None) == dict(original["system"], machine_id=None)
    assert imported["doctor"] == original["doctor"]
    assert "imported from run.json" in imported["note"] and imported["status"] == "complete"


def test_a_whole_database_imports(tmp_path):
    src, dst = tmp_path / "a.db", f"sqlite:///{tmp_path / 'b.db'}"
    store_run(f"sqlite:///{src}", full_run_documents()[:3])
    store_run(f"sqlite:///{src}", full_run_documents()[3:6])
    p = rtgauge("import", str(src), "--db", dst)
    assert p.returncode == 0, p.stderr
    with open_store(dst) as b:
        assert [r["measurements"] for r in b.list_runs()] == [3, 3]


def test_csv_and_markdown(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    run_id = store_run(url, full_run_documents(n=RATED_N))   # long enough to be rated
    p = rtgauge("export", str(run_id), "--db", url, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    mx = [r for r in rows if r["measurement"] == "latency@idle" and r["metric"] == "ti" and r["statistic"] == "max"]
    assert [r["value"] for r in mx] == ["40000"]
    assert any(r["kind"] == "verdict" and r["value"] == "0" for r in rows)
    p = rtgauge("export", str(run_id), "--db", url, "--format", "md")
    assert p.returncode == 0 and "## Wake-up latency (µs)" in p.stdout and "| latency@idle | engine | idle |" in p.stdout
    assert "★★★★★" in p.stdout


def test_engine_documents_from_a_board_become_a_run(tmp_path, run_engine):
    board = tmp_path / "board"
    board.mkdir()
    for cond in ("idle", "cpu"):
        r = run_engine("latency", "--duration-s", "0.3", "--allow-fallback", "--out", str(board / f"latency@{cond}.json"),
                       check_json=False)
        assert r.status == 0, r.stderr
    dst = f"sqlite:///{tmp_path / 'b.db'}"
    p = rtgauge("import", str(board), "--db", dst)
    assert p.returncode == 0, p.stderr
    with open_store(dst) as b:
        run = b.get_run(b.latest_run_id())
    doc = json.loads((board / "latency@idle.json").read_text())
    assert run["system"]["hostname"] == doc["env"]["hostname"]
    assert run["system"]["kernel_release"] == doc["env"]["kernel"]
    assert [(m["name"], m["condition"]) for m in run["measurements"]] == [("latency@cpu", "cpu"), ("latency@idle", "idle")]
    assert run["measurements"][1]["metrics"]["ti"]["max"] == doc["metrics"]["ti"]["max"]
    p = rtgauge("report", "--db", dst, "-o", str(tmp_path / "r.html"))
    assert p.returncode == 0 and "Wake-up latency" in (tmp_path / "r.html").read_text()


def test_bad_input_stores_nothing(tmp_path):
    dst = tmp_path / "b.db"
    url = f"sqlite:///{dst}"
    store_run(url, full_run_documents()[:1])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a@idle.json").write_text(json.dumps(full_run_documents()[0][1]))
    (bad / "b@idle.json").write_text("{not json")
    notdoc = tmp_path / "x.json"
    notdoc.write_text(json.dumps({"hello": HOSTILE}))
    for source, message in ((bad, "is not valid JSON"), (notdoc, "neither an rtgauge export"),
                            (tmp_path / "missing", "does not exist")):
        p = rtgauge("import", str(source), "--db", url)
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    with open_store(url) as s:
        assert len(s.list_runs()) == 1
