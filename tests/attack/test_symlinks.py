"""Files rtgauge writes are never written through a planted symbolic link and never
truncated in place (rtgauge/safefile.py): a report, an export, the lab's write probe and
its logs. A link at the name is refused and its target left as it was; a failed write
leaves the previous file. tests/attack/test_writers.py walks every option that names a
file with the whole hostile table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge import safefile

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def victim(tmp_path) -> Path:
    v = tmp_path / "victim"
    v.write_text("untouched")
    return v


def test_a_planted_link_is_refused_not_followed(tmp_path, victim):
    link = tmp_path / "rtgauge-run-7.html"
    link.symlink_to(victim)
    with pytest.raises(safefile.Refused) as e:
        safefile.write_text(link, "<html>")
    assert "symbolic link" in e.value.strerror
    assert victim.read_text() == "untouched" and link.is_symlink()


def test_a_failed_write_leaves_the_previous_file(tmp_path):
    target = tmp_path / "export.json"
    target.write_text("previous")
    with pytest.raises(RuntimeError):
        with safefile.open_for_write(target) as f:
            f.write("half")
            raise RuntimeError("disk full")
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["export.json"]      # no temporary file left


def test_a_device_is_refused_and_never_opened(tmp_path):
    """Opening a device can act (a watchdog starts, a tape rewinds): refused by lstat."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)                  # opened for writing, a FIFO without a reader would block
    for path in ("/dev/full", "/dev/null", fifo):
        with pytest.raises(safefile.Refused):
            safefile.write_text(path, "x")
    assert Path("/dev/null").is_char_device() and Path("/dev/full").is_char_device()


def test_create_new_removes_a_link_and_never_opens_it(tmp_path, victim):
    log = tmp_path / "01-board.log"
    log.symlink_to(victim)
    os.close(safefile.create_new(log))
    assert victim.read_text() == "untouched" and not log.is_symlink()


def test_the_lab_write_probe_does_not_follow_a_link(tmp_path, victim, monkeypatch):
    from rtgauge.cli.lab import prepare_logs
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / f".rtgauge-write-test.{os.getpid()}").symlink_to(victim)
    (logs / ".rtgauge-write-test").symlink_to(victim)
    prepare_logs(str(logs))
    assert victim.read_text() == "untouched"


def test_report_through_a_planted_link(tmp_path, victim, engine_bin):
    doc = tmp_path / "lat.json"
    subprocess.run([engine_bin, "latency", "--duration-s", "0.2", "--policy", "other", "--out", str(doc)],
                   check=True, capture_output=True, timeout=120)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    db = tmp_path / "r.db"

    def rtgauge(*a):
        from conftest import rtgauge as cli
        return cli(*a, env_full=env, cwd=tmp_path, timeout=300)
    assert rtgauge("import", str(doc), "--db", str(db)).returncode == 0
    out = tmp_path / "rtgauge-report-1.html"
    out.symlink_to(victim)
    p = rtgauge("report", "1", "--db", str(db))
    assert p.returncode == 2 and "symbolic link" in p.stderr, p.stderr
    assert victim.read_text() == "untouched" and out.is_symlink()
    p = rtgauge("report", "1", "--db", str(db), "-o", "/dev/full")
    assert p.returncode == 2 and "it is a device" in p.stderr and "Traceback" not in p.stderr


def test_run_says_what_to_do_in_its_own_words(tmp_path):
    """A report that cannot be written after a run names the run's own way out (run has no -o)."""
    from rtgauge.report.output import write_html
    from rtgauge.errors import UserError
    full = tmp_path / "full"
    full.mkdir()
    with pytest.raises(UserError) as e:
        write_html(str(full), [], fix="the run is stored; write its report elsewhere with `rtgauge report 3 -o FILE`")
    assert "rtgauge report 3 -o FILE" in str(e.value) and "choose another file" not in str(e.value)
