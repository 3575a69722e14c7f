"""jitterdebugger's results in rtgauge, against real jitterdebugger output made here (the
Debian package): the directory `jitterdebugger -o DIR` writes, and its results.json alone,
import as a run whose per-thread sample count, min and max are jitterdebugger's own, with
the samples beyond its histogram counted as overflows (not lost, not invented); counting
in ns (-N) keeps the ns; the system's facts come from the copies it makes of uname, cpuinfo
and the kernel config; the same file twice is one run; `export --format cyclictest` of the
imported run gives cyclictest's footer with jitterdebugger's figures. Files of the wrong
shape, or whose figures contradict each other, are refused in one sentence with nothing
stored, and a planted symbolic link among the system files is not followed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.shared,
              pytest.mark.skipif(shutil.which("jitterdebugger") is None,
                                 reason="jitterdebugger not installed (scripts/setup.sh --all installs it)")]


def rtgauge(*args, db: str) -> subprocess.CompletedProcess:
    from conftest import rtgauge as cli
    return cli(*args, env_full=dict(os.environ, RTGAUGE_DB=db), cwd=os.getcwd(), timeout=300)


def jitterdebugger(out, *extra) -> dict:
    """One real run on CPU 0 at a low FIFO priority, 2 s: a few thousand samples."""
    cmd = ["jitterdebugger", "-D", "2s", "-a", "0", "-p", "1", "-i", "500", "-o", str(out), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def made_here(tmp_path_factory):
    d = tmp_path_factory.mktemp("jitterdebugger")
    return {"us": (d / "us", jitterdebugger(d / "us")), "ns": (d / "ns", jitterdebugger(d / "ns", "-N"))}


def only_measurement(db: str, run: int = 1) -> tuple[dict, dict]:
    p = rtgauge("show", str(run), "--json", db=db)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["measurements"]) == 1
    return doc, doc["measurements"][0]


@pytest.mark.parametrize("unit", ["us", "ns"])
def test_its_own_figures_come_through(made_here, tmp_path, unit):
    out, raw = made_here[unit]
    scale = 1000 if unit == "us" else 1
    assert raw["sysinfo"]["resolution_in_ns"] == scale
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("import", str(out), db=db)
    assert p.returncode == 0, p.stderr
    run, m = only_measurement(db)
    assert m["tool"] == "jitterdebugger" and m["test"] == "latency" and m["reference"] is True
    docm = m["document"]["metrics"]
    [(key, t)] = raw["cpu"].items()
    ti = docm[f"ti#{key}"]
    assert ti["count"] == t["count"] > 1000
    assert ti["min"] == t["min"] * scale and ti["max"] == t["max"] * scale
    assert ti["avg"] == pytest.approx(t["avg"] * scale, rel=1e-6)
    inside = sum(t["histogram"].values())
    assert sum(c for _, _, c in ti["histogram"]["bins"]) == inside
    assert ti["histogram"].get("overflow", 0) == t["count"] - inside
    # the median from the buckets is jitterdebugger's own nearest-rank median
    ranked = sorted((int(v), c) for v, c in t["histogram"].items())
    seen, rank = 0, -(-t["count"] // 2)
    for value, count in ranked:
        seen += count
        if seen >= rank:
            break
    assert ti["p50"] == value * scale
    assert docm["ti"]["count"] == t["count"] and docm["ti"]["max"] == t["max"] * scale
    system = run["system"]
    assert system["hostname"] == raw["sysinfo"]["nodename"]
    assert system["kernel_release"] == raw["sysinfo"]["release"] == os.uname().release
    assert system["arch"] == os.uname().machine
    cpuinfo = (out / "cpuinfo").read_text()
    if "model name" in cpuinfo:
        assert system["cpu_model"] and system["cpu_model"] in cpuinfo
    assert system["preempt_model"]             # from uname -v and the copied kernel config
    assert "jitterdebugger" in run["origin"]["format"]


def test_the_same_results_twice_are_one_run_and_read_back_as_cyclictest(made_here, tmp_path):
    out, raw = made_here["us"]
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert rtgauge("import", str(out), db=db).returncode == 0
    again = rtgauge("import", str(out / "results.json"), db=db)
    assert again.returncode == 0 and "imported before as run 1" in again.stdout
    assert "no run 2" in rtgauge("show", "2", db=db).stderr
    hist = rtgauge("export", "1", "--format", "cyclictest", "-o", "-", db=db)
    assert hist.returncode == 0, hist.stderr
    footer = {line.split(":")[0]: line.split(":", 1)[1].split() for line in hist.stdout.splitlines()
              if line.startswith("# ") and ":" in line}
    [t] = raw["cpu"].values()
    assert [int(v) for v in footer["# Max Latencies"]] == [t["max"]]
    assert [int(v) for v in footer["# Min Latencies"]] == [t["min"]]
    assert [int(v) for v in footer["# Histogram Overflows"]] == [t["count"] - sum(t["histogram"].values())]


def hostile(tmp_path, raw: dict, name: str = "results.json"):
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize("mend, said", [
    (lambda r: r["cpu"]["0"].update(count=1), "values in its histogram but a count of 1"),
    (lambda r: r["cpu"]["0"].update(max=0), "outside its min"),
    (lambda r: r.update(version=9), "version 9, which this rtgauge does not read"),
    (lambda r: r["cpu"]["0"]["histogram"].update({"12": -3}), "jitterdebugger results.json"),
    (lambda r: r["sysinfo"].update(resolution_in_ns=7), "jitterdebugger results.json"),
    (lambda r: r["cpu"]["0"].pop("count"), "jitterdebugger results.json"),
])
def test_a_file_of_the_wrong_shape_is_refused_and_nothing_stored(made_here, tmp_path, mend, said):
    raw = json.loads(json.dumps(made_here["us"][1]))
    raw["cpu"] = {"0": next(iter(raw["cpu"].values()))}
    mend(raw)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("import", str(hostile(tmp_path, raw)), db=db)
    assert p.returncode == 2, p.stdout
    assert said in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists() or "no run 1" in rtgauge("show", "1", db=db).stderr


def test_a_planted_link_among_the_system_files_is_not_followed(made_here, tmp_path):
    out, _ = made_here["us"]
    d = tmp_path / "jd"
    shutil.copytree(out, d)
    secret = tmp_path / "secret"
    secret.write_text("model name\t: SECRET-FROM-THE-HOST\n")
    (d / "cpuinfo").unlink()
    (d / "cpuinfo").symlink_to(secret)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("import", str(d), db=db)
    assert p.returncode == 0, p.stderr
    run, _ = only_measurement(db)
    assert "SECRET" not in json.dumps(run)
    assert run["system"]["cpu_model"] is None
