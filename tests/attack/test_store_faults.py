"""The results database's faults mid-run: a disk that fills, PostgreSQL going away or
frozen, an SQLite database locked by another process. What was measured is spooled and
imports; nothing hangs. Each runs `rtgauge run` with real measurements (the shared pass:
SCHED_FIFO), so what is spooled is what was measured."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import needs_root, rtgauge_popen
from attack.test_faults import PROFILE, children_of, env, popen, rtgauge, wait_until

pytestmark = pytest.mark.shared


@needs_root
def test_a_full_disk_mid_run_spools_what_was_measured(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], check=True)
    try:
        prof = tmp_path / "p.toml"
        prof.write_text(PROFILE.format(conditions='"idle"', seconds=2)
                        + '[[jobs]]\nname = "lat2"\ntest = "latency"\n[jobs.options]\nduration-s = 2\n')
        db = small / "r.db"
        p = popen(tmp_path, "run", "--profile", str(prof), "--db", str(db), "--no-report")
        con_ok = wait_until(lambda: db.exists() and len(measurement_names(db)) >= 1, 60)
        assert con_ok
        subprocess.run(["dd", "if=/dev/zero", f"of={small / 'fill'}", "bs=64k"], capture_output=True)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 1, out + err
        text = " ".join((out + err).split())
        assert "rtgauge import" in text, text
        spool = Path(text.split("saved in ")[1].split(":")[0])
        assert spool.exists() and not str(spool).startswith(str(small))   # the full disk refused it
        # nothing of the spool left on the full disk: no partial copy, no temporary file
        assert not [p for p in small.iterdir() if "spool" in p.name], sorted(small.iterdir())
        (small / "fill").unlink()
        r = rtgauge(tmp_path, "import", str(spool), "--db", str(tmp_path / "back.db"))
        assert r.returncode == 0, r.stderr
        assert measurement_names(tmp_path / "back.db") == ["lat@idle", "lat2@idle"]
        assert not spool.exists(), "the spool file was left after its run was stored"
    finally:
        subprocess.run(["umount", "-l", str(small)])


def measurement_names(db: Path) -> list[str]:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return [r[0] for r in con.execute("SELECT name FROM measurements ORDER BY id")]
        finally:
            con.close()
    except sqlite3.Error:
        return []


@needs_root
@pytest.mark.postgres
def test_postgresql_going_away_mid_run_spools_what_was_measured(tmp_path):
    from pgserver import PgServer, ServerUnavailable
    try:
        server = PgServer()
        server.start()
    except ServerUnavailable as e:
        pytest.skip(f"no PostgreSQL server: {e}")
    try:
        url = server.new_database()
        prof = tmp_path / "p.toml"
        prof.write_text(PROFILE.format(conditions='"idle"', seconds=2)
                        + '[[jobs]]\nname = "lat2"\ntest = "latency"\n[jobs.options]\nduration-s = 3\n')
        p = popen(tmp_path, "run", "--profile", str(prof), "--db", url, "--no-report")

        assert wait_until(lambda: stored_count(url) >= 1, 90)
        server._run("pg_ctl", "-D", str(server.data), "-m", "immediate", "-w", "stop")
        out, err = p.communicate(timeout=120)
        assert p.returncode == 1, out + err
        text = " ".join((out + err).split())
        assert "Traceback" not in text and "rtgauge import" in text, text
        spool = Path(text.split("saved in ")[1].split(":")[0])
        r = rtgauge(tmp_path, "import", str(spool), "--db", str(tmp_path / "back.db"))
        assert r.returncode == 0, r.stderr
        assert measurement_names(tmp_path / "back.db") == ["lat@idle", "lat2@idle"]
    finally:
        server.stop()


@needs_root
@pytest.mark.postgres
def test_a_frozen_postgresql_does_not_hang_the_run(tmp_path):
    """SIGSTOP to the server: its kernel still acknowledges, so only the client-side cut
    ends the wait (RTGAUGE_DB_TIMEOUT_S=3: cut after 6 s); what was measured is spooled."""
    from pgserver import PgServer, ServerUnavailable
    try:
        server = PgServer()
        server.start()
    except ServerUnavailable as e:
        pytest.skip(f"no PostgreSQL server: {e}")
    frozen: list[int] = []
    try:
        url = server.new_database()
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
        prof = tmp_path / "p.toml"
        prof.write_text(PROFILE.format(conditions='"idle"', seconds=2)
                        + '[[jobs]]\nname = "lat2"\ntest = "latency"\n[jobs.options]\nduration-s = 3\n')
        e = env(tmp_path)
        e["RTGAUGE_DB_TIMEOUT_S"] = "3"
        p = rtgauge_popen("run", "--profile", str(prof), "--db", url, "--no-report", env_full=e, cwd=tmp_path)
        assert wait_until(lambda: stored_count(url) >= 1, 90)
        frozen = []
        for pid in [postmaster, *children_of(postmaster)]:
            try:
                os.kill(pid, signal.SIGSTOP)
                frozen.append(pid)
            except ProcessLookupError:      # a backend that ended between the listing and the stop
                pass
        assert postmaster in frozen
        started = time.monotonic()
        out, err = p.communicate(timeout=120)
        took = time.monotonic() - started
        assert p.returncode == 1, out + err
        text = " ".join((out + err).split())
        assert "Traceback" not in text and "rtgauge import" in text, text
        assert took < 60, took
    finally:
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        server.stop()


def stored_count(url: str) -> int:
    import psycopg
    try:
        with psycopg.connect(url, connect_timeout=5) as c:
            return c.execute("SELECT count(*) FROM measurements").fetchone()[0]
    except psycopg.Error:
        return 0


@needs_root
def test_a_database_locked_mid_run_spools_what_was_measured(tmp_path):
    """Another process holds the SQLite write lock past the busy timeout
    (RTGAUGE_DB_TIMEOUT_S=2): the run goes to the spool, nothing measured is lost."""
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(conditions='"idle"', seconds=1)
                    + '[[jobs]]\nname = "lat2"\ntest = "latency"\n[jobs.options]\nduration-s = 2\n')
    db = tmp_path / "r.db"
    e = env(tmp_path)
    e["RTGAUGE_DB_TIMEOUT_S"] = "2"
    p = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report", env_full=e, cwd=tmp_path)
    assert wait_until(lambda: len(measurement_names(db)) >= 1, 60)
    locker = sqlite3.connect(db, timeout=10, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        out, err = p.communicate(timeout=120)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert p.returncode == 1, out + err
    text = " ".join((out + err).split())
    assert "database is locked" in text and "rtgauge import" in text, text
    spool = Path(text.split("saved in ")[1].split(":")[0])
    r = rtgauge(tmp_path, "import", str(spool), "--db", str(tmp_path / "back.db"))
    assert r.returncode == 0, r.stderr
    assert measurement_names(tmp_path / "back.db") == ["lat@idle", "lat2@idle"]
    assert not spool.exists() and f"removed {spool}" in " ".join(r.stdout.split()), r.stdout
