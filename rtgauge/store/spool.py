"""What was measured survives the store: a run's measurements go to the database and,
when it fails (locked past its busy timeout, disk full, PostgreSQL gone or timing out),
to a spool file in the export format, so `rtgauge import SPOOLFILE` stores them later.

Spool wraps a Store for one run. Every measurement is kept in memory as it is
stored; at the first store failure the whole run so far is written to the spool file
and every later measurement is added to it (the database is not tried again for this
run, so the spool is the run, complete). The spool file goes beside an SQLite
database, else in the data directory, else in the temporary directory — the first
that takes it (a full disk under the database need not be full elsewhere)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from rtgauge import __version__, safefile
from rtgauge.records import EXPORT_FORMAT
from rtgauge.redact import redact_argv
from rtgauge.store.store import StoreError
from rtgauge.store.urls import default_db_path, sqlite_file


SPOOL_NAME = re.compile(r"rtgauge-spool-run[0-9]+-[0-9]+\.json")


def spool_name(run_id: int) -> str:
    return f"rtgauge-spool-run{run_id}-{os.getpid()}.json"


def is_spool_name(name: str) -> bool:
    """A file name this module gives a spool file (`rtgauge import` removes it once stored)."""
    return SPOOL_NAME.fullmatch(name) is not None


def remove_stored_spool(path: Path) -> bool:
    """Once `rtgauge import` has stored a spool file's run, the file has done its work and
    goes (no orphan copy waits to be imported twice). Only a regular file under a name
    this module gives is removed: a file renamed by the user, or a link, is left alone.
    True when it was removed."""
    try:
        if not is_spool_name(path.name) or not os.path.isfile(path) or os.path.islink(path):
            return False
        path.unlink()
        return True
    except OSError:
        return False


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Spool:
    def __init__(self, store, run_id: int, system: dict, doctor: list, profile: str,
                 profile_source: str, argv: list[str]):
        self.store = store
        self.run_id = run_id
        self.run = {"id": run_id, "status": "running", "note": "", "profile": profile,
                    "profile_source": profile_source, "started_at": now(), "finished_at": None,
                    "argv": redact_argv([str(a) for a in argv]), "system": system, "doctor": list(doctor),
                    "measurements": []}
        self.failure: StoreError | None = None
        self.path: Path | None = None
        self.write_error: str | None = None

    @property
    def url(self) -> str:
        return self.store.url

    def __getattr__(self, name):
        return getattr(self.store, name)

    # -- writing through -----------------------------------------------------------

    def add_measurement(self, run_id: int, job: dict, doc: dict) -> int | None:
        self.run["measurements"].append(dict(job, document=doc))
        if self.failure is None:
            try:
                return self.store.add_measurement(run_id, job, doc)
            except StoreError as e:
                self.failure = e
        self.write()
        return None

    def finish_run(self, run_id: int, status: str, note: str = "") -> None:
        if self.failure is None:
            try:
                return self.store.finish_run(run_id, status, note)
            except StoreError as e:
                self.failure = e
        self.run.update(status=status, note=note, finished_at=now())
        self.write()
        try:        # best effort: the database may be back, or still down
            self.store.finish_run(run_id, "failed", f"the results database failed mid-run; the whole run "
                                  f"is in {self.path}: `rtgauge import {self.path}` stores it")
        except Exception:
            pass

    @property
    def spooled(self) -> bool:
        return self.failure is not None

    # -- the spool file ------------------------------------------------------------------

    def candidates(self) -> list[Path]:
        out = []
        db = sqlite_file(getattr(self.store, "_url", None)) if getattr(self.store, "_url", None) is not None else None
        if db is not None:
            out.append(db.parent)
        out += [default_db_path().parent, Path(tempfile.gettempdir())]
        return list(dict.fromkeys(out))

    def write(self) -> None:
        """The whole run so far, to the spool file: where it was (rewritten whole), else the
        first candidate directory that takes it. A spool that had to move (its disk filled)
        leaves no older, partial copy behind: one run, one spool file."""
        text = json.dumps({"rtgauge_export": EXPORT_FORMAT, "rtgauge_version": __version__, "exported_at": now(),
                           "spooled_because": str(self.failure), "run": self.run}, indent=1, default=str)
        errors = []
        previous = self.path
        for directory in ([previous.parent] if previous else []) + self.candidates():
            path = directory / spool_name(self.run_id)
            try:
                directory.mkdir(parents=True, exist_ok=True)
                safefile.write_text(path, text, mode=0o600)   # a new file, renamed whole; nothing planted followed
                self.path, self.write_error = path, None
                if previous is not None and previous != path:
                    with contextlib.suppress(OSError):
                        previous.unlink()
                return
            except OSError as e:
                errors.append(f"{directory}: {safefile.reason(e)}")
                self.path = None
        self.write_error = "; ".join(errors)

    def message(self) -> str:
        n = len(self.run["measurements"])
        if self.path is None:
            return (f"the results database failed ({self.failure}) and the {n} measurement(s) of run "
                    f"{self.run_id} could not be saved anywhere ({self.write_error}).")
        return (f"the results database failed ({self.failure}); the {n} measurement(s) of run {self.run_id} are "
                f"saved in {self.path}: store them with `rtgauge import {self.path}` when the database works "
                "again.")
