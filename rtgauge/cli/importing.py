"""`rtgauge import FILE|DIR`: results measured elsewhere into the store —
- a JSON export (`rtgauge export RUN --format json` on another machine),
- another rtgauge database (an SQLite file: every run in it),
- a directory of engine JSON documents (or one document) copied from a board that
  has no Python: one new run whose system facts come from the documents' env.
  A document named NAME@CONDITION.json is measurement NAME@CONDITION under load
  CONDITION; other names take --condition (default idle),
- cyclictest's own files: its --json output and its -h/--histfile histogram (also
  what `rtgauge export --format cyclictest` writes), `rtla timerlat hist`'s text, and
  jitterdebugger's results (its results.json, or the directory `jitterdebugger -o DIR`
  wrote, whose copies of uname, cpuinfo and the kernel config give the system facts),
  and stress-ng's log of a --cyclic run (its --yaml holds no latency figures).
Everything is read and checked before anything is stored, and each run is stored in
one transaction. Every imported run keeps its original start time and states its origin
(the format, the file, an identity); importing the same run again (by that identity: the
original run's, or the foreign file's content hash) stores nothing the second time."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rtgauge.bounds import RUN_RANGE_MAX
from rtgauge.errors import UserError
from rtgauge.owner import hash_machine_id
from rtgauge.records import EXPORT_FORMAT, Run
from rtgauge.report.exports import export_csv, export_md
from rtgauge.report.html import render
from rtgauge.report.runtext import print_run
from rtgauge.report.safe import SafeConsole, say as said
from rtgauge.report.terminal import print_summary
from rtgauge.store import open_store as opened, validate
from rtgauge.store.spool import remove_stored_spool
from rtgauge.store.store import split_old_name
from rtgauge.store.urls import normalise_url, sqlite_file
from rtgauge.tools import adapters
from rtgauge.tools.adapter import CONDITION, Found


def open_store(url):
    return opened(url)


def say(text="", **kwargs) -> None:
    said(text, **kwargs)

FINAL = ("complete", "interrupted", "failed", "abandoned")
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class Prepared:
    """One run ready to store: checked, dry-read, with its origin."""
    run: dict
    measurements: list[tuple[dict, dict]]
    origin: dict
    what: str                       # for the message: "run 3 of host-a", "cyclictest --json file"
    where: str = ""
    extra: dict = field(default_factory=dict)


def check_condition(value: str) -> str:
    if not CONDITION.fullmatch(value or ""):
        raise UserError(f"--condition {validate.short(value)} is not a condition name; give 1 to 64 letters, "
                        "digits, '.', '_', '+' or '-', starting with a letter or digit (e.g. idle, stress-cpu).")
    return value


def job_of(m: dict) -> dict:
    """How an exported measurement ran. Its round and segment are fields since store
    schema 4; an export of an older rtgauge carried them in the name (`NAME#rK`,
    `NAME#segN`), read here once (the store's migration reads its own rows the same way)."""
    job = {k: m.get(k) for k in ("name", "tool", "test", "condition", "reference", "round", "segment", "load",
                                 "started_at", "duration_s", "exit_status", "command", "error")}
    if job["round"] is None and job["segment"] is None and isinstance(job["name"], str):
        load = m.get("load") if isinstance(m.get("load"), dict) else {}
        job["name"], job["round"], job["segment"] = split_old_name(job["name"], load)
    return job


def check_export_run(data, where: str) -> dict:
    """The export's run, checked by the schema and read as show/report will read it."""
    run = validate.check_export(data, where)
    dry_read(run, where)
    return run


def iso_time(value, where: str, what: str) -> str | None:
    """A stored timestamp (UTC ISO 8601, as rtgauge writes them) from an import's."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise UserError(f"{where}: {what} {validate.short(value)} is not an ISO 8601 time; export the run "
                        "again with `rtgauge export RUN --format json`.") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat()


def prepared_export_run(run: dict, source: str, fmt: str) -> Prepared:
    """A complete run dict (an export's or another database's) ready to store: its own
    start and end times, and the identity of the run as first measured (an imported
    run exported again keeps the identity of its first origin)."""
    where = f"{source} run {run.get('id')}"
    started = iso_time(run.get("started_at"), where, "started_at")
    finished = iso_time(run.get("finished_at"), where, "finished_at")
    system = run.get("system") or {}
    first = run.get("origin") if isinstance(run.get("origin"), dict) else None
    if first and first.get("identity"):
        identity, original = str(first["identity"]), first.get("original")
    else:
        original = {"run": run.get("id"), "started_at": started, "machine": machine_of(system)}
        identity = f"rtgauge:{original['machine']}:{run.get('id')}:{started}"
    origin = {"format": fmt, "file": Path(source).name, "identity": identity[:400], "run": run.get("id"),
              "host": system.get("hostname")}
    if isinstance(original, dict):
        origin["original"] = original
    if first:
        origin["first"] = {k: first.get(k) for k in ("format", "file", "identity") if k in first}
    status = run.get("status") if run.get("status") in FINAL else "interrupted"
    stored = {"system": system, "doctor": run.get("doctor") or [],
              "profile": str(run.get("profile") or "imported"),
              "profile_source": str(run.get("profile_source") or f"imported:{Path(source).name}"),
              "argv": list(run.get("argv") or []), "status": status, "started_at": started,
              "finished_at": finished, "note": str(run.get("note") or "")}
    return Prepared(stored, [(job_of(m), m["document"]) for m in run["measurements"]], origin,
                    f"run {run.get('id')} of {system.get('hostname') or '?'}", source)


def machine_of(system: dict) -> str:
    return hash_machine_id(system.get("machine_id")) or f"host={system.get('hostname') or '?'}"


def already_here(store, p: Prepared) -> int | None:
    """The run of this database that p is a copy of: one imported before with the same
    origin identity, or the original run itself (an export coming back home)."""
    found = store.find_import(p.origin["identity"])
    if found is not None:
        return found
    original = p.origin.get("original")
    if p.origin.get("format") == "rtgauge spool":
        return None
    if isinstance(original, dict) and isinstance(original.get("run"), int) and 0 < original["run"] < 2**63:
        try:
            local = store.get_run(original["run"], documents=False)
        except Exception:
            return None
        if local and iso_time(local.started_at, "", "") == original.get("started_at") \
                and machine_of(local.system) == original.get("machine"):
            return original["run"]
    return None


def read_json(path: Path):
    return validate.read_json_file(path)


def content_identity(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(hashlib.sha256(chunk).digest())
    return "sha256:" + digest.hexdigest()


# What one run of another database may hold as text (its documents, JSON columns and
# histogram data) and rows (metrics, histograms): an export of that run would be about
# that size, so reading it is bounded as an export file's import is (FILE_MAX).
RUN_ROWS_MAX = 200_000


def rtgauge_database_runs(path: Path) -> list[int]:
    """Run ids of another rtgauge SQLite database, read-only (never creates tables
    there); a run larger than an import file may be (validate.FILE_MAX of text,
    RUN_ROWS_MAX rows) is refused before anything is read."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"runs", "measurements", "schema_version", "metrics", "histograms"} <= tables:
                raise UserError(f"{path} is an SQLite database but not an rtgauge results database; "
                                "give an rtgauge database, export or engine documents.")
            ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id")]
            if len(ids) > RUN_RANGE_MAX:
                raise UserError(f"{path} holds {len(ids):,} runs, more than one import takes ({RUN_RANGE_MAX:,}); "
                                "export the runs you need with `rtgauge export` and import those.")
            sizes = con.execute(
                "SELECT r.id, COALESCE(LENGTH(r.system_facts), 0) + COALESCE(LENGTH(r.doctor), 0) "
                "+ COALESCE(LENGTH(r.argv), 0) + COALESCE(LENGTH(r.note), 0) + COALESCE(LENGTH(r.origin), 0) "
                "+ COALESCE((SELECT SUM(COALESCE(LENGTH(m.document), 0) + COALESCE(LENGTH(m.params), 0) "
                "+ COALESCE(LENGTH(m.env), 0) + COALESCE(LENGTH(m.load), 0) + COALESCE(LENGTH(m.command), 0) "
                "+ COALESCE(LENGTH(m.error), 0)) FROM measurements m WHERE m.run_id = r.id), 0) "
                "+ COALESCE((SELECT SUM(COALESCE(LENGTH(h.data), 0) + COALESCE(LENGTH(h.extra), 0) "
                "+ COALESCE(LENGTH(x.extra), 0)) FROM histograms h JOIN metrics x ON x.id = h.metric_id "
                "JOIN measurements m ON m.id = x.measurement_id WHERE m.run_id = r.id), 0), "
                "(SELECT COUNT(*) FROM metrics x JOIN measurements m ON m.id = x.measurement_id "
                "WHERE m.run_id = r.id) FROM runs r").fetchall()
            for run_id, size, rows in sizes:
                if (size or 0) > validate.FILE_MAX or (rows or 0) > RUN_ROWS_MAX:
                    raise UserError(f"{path} run {run_id} holds {(size or 0) / 1024**2:,.0f} MiB of text and "
                                    f"{rows or 0:,} metrics, more than an import takes ({validate.FILE_MAX // 1024**2} "
                                    f"MiB, {RUN_ROWS_MAX:,} metrics a run); nothing stored.")
            return ids
        finally:
            con.close()
    except sqlite3.Error as e:
        raise UserError(f"cannot read the database {path} ({e}); check the file.") from None


def same_file(path: Path, db_url: str | None) -> bool:
    """Whether path is the SQLite database of db_url, by device and inode (a hard link,
    `/./` or a symlink name the same file differently)."""
    try:
        target = sqlite_file(normalise_url(db_url))
        if target is None:
            return False
        a, b = os.stat(path), os.stat(target)
    except (OSError, UserError, ValueError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def cmd_import(args) -> int:
    try:
        if args.source != "-":
            return import_source(args, Path(args.source))
        # standard input: kept in a private temporary file (at most FILE_MAX bytes), then
        # read as any file would be
        with tempfile.TemporaryDirectory(prefix="rtgauge-import-") as tmp:
            path = Path(tmp) / "stdin"
            copy_stdin(path)
            return import_source(args, path)
    except MemoryError:
        raise UserError(f"importing {args.source} needs more memory than this process may use; raise its memory "
                        "limit or import a smaller file.") from None


def copy_stdin(path: Path) -> None:
    """Standard input into path, at most an import file's bound (FILE_MAX): /dev/zero
    stops there with one sentence, a closed or unreadable input is one sentence."""
    limit = validate.FILE_MAX
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UserError("standard input is closed; pipe an export, a database or an engine document into "
                        "`rtgauge import -`.")
    copied = 0
    try:
        with open(path, "wb") as f:
            while copied <= limit:
                chunk = stream.read(min(1 << 20, limit + 1 - copied))
                if not chunk:
                    break
                f.write(chunk)
                copied += len(chunk)
    except OSError as e:
        raise UserError(f"cannot keep standard input for the import ({e.strerror or e}); give the file's "
                        "path instead of -.") from None
    except ValueError:      # a closed stream
        raise UserError("standard input is closed; pipe an export, a database or an engine document into "
                        "`rtgauge import -`.") from None
    if copied > limit:
        raise UserError(f"standard input holds more than an import takes ({limit // 1024**2} MiB); split it "
                        "or export fewer runs.")
    if copied == 0:
        raise UserError("standard input is empty; pipe an export, a database or an engine document into "
                        "`rtgauge import -`.")


def import_source(args, source: Path) -> int:
    condition = check_condition(args.condition)
    if not source.exists():
        raise UserError(f"{source} does not exist; give an export file, a database or a directory of engine documents.")
    if source.is_dir():
        return store_prepared(args, [prepared_tool(Found(source, is_dir=True), condition)])
    if not source.is_file():
        raise UserError(f"{source} is not a regular file (a device, pipe or socket); give an export file, a "
                        "database or a directory of engine documents.")
    with open(source, "rb") as f:
        head = f.read(4096)
    if head.startswith(SQLITE_MAGIC):
        return import_database(args, source)
    found = Found(source, head)
    if found.is_json:
        found.data = read_json(source)
        if isinstance(found.data, dict) and "rtgauge_export" in found.data:
            return store_prepared(args, [prepared_export(source, found.data)])
    return store_prepared(args, [prepared_tool(found, condition)])


def prepared_export(source: Path, data: dict) -> Prepared:
    if data["rtgauge_export"] != EXPORT_FORMAT:
        raise UserError(f"{source} is export format {str(data['rtgauge_export'])[:40]}, which this rtgauge "
                        "does not read; upgrade rtgauge.")
    run = check_export_run(data, str(source))
    if "spooled_because" in data:
        # a spool file (rtgauge/store/spool.py): the whole of a run whose database failed
        # mid-run; that database's copy of it is the partial one, so it is not "already here"
        return prepared_export_run(run, str(source), "rtgauge spool")
    return prepared_export_run(run, str(source), "rtgauge export")


def prepared_tool(found: Found, condition: str) -> Prepared:
    """A file (or directory) of a tool in the table (rtgauge/tools), by the first adapter
    that recognises it, read, dry-read and ready to store."""
    tool = next((a for a in adapters() if a.sniff(found)), None)
    if tool is None:
        if found.is_json:
            raise UserError(f"{found.path} is neither an rtgauge export, an engine document, a cyclictest --json "
                            "file nor jitterdebugger's results.json; make one with `rtgauge export RUN --format "
                            "json` or the engine's --out.")
        raise UserError(f"{found.path} is neither an rtgauge export, an engine document nor a cyclictest --json "
                        "file or histfile; make one with `rtgauge export RUN --format json` or the engine's --out.")
    got = tool.read(found, condition)
    source = got.source or found.path
    paths = got.paths or [source]
    where = str(source)
    facts = got.facts
    dry_read({"system": facts, "measurements": [dict(job, document=doc) for job, doc in got.docs]},
             str(paths[0].parent if len(paths) > 1 else paths[0]))
    run = {"system": facts, "doctor": [], "profile": "imported",
           "profile_source": got.profile_source or f"{got.fmt} file {source.name}",
           "argv": ["rtgauge", "import", where], "status": "complete",
           "started_at": iso_time(got.started, where, "run_start_wall"), "finished_at": got.finished,
           "note": got.note or (f"imported from {got.fmt} {source.name}" + (f" ({got.detail})" if got.detail else ""))}
    return Prepared(run, got.docs, {"format": got.fmt, "file": source.name, "identity": content_identity(paths)},
                    got.what or f"{got.fmt} of {facts.get('hostname') or 'an unnamed system'}", where)


def store_prepared(args, prepared) -> int:
    """Store each prepared run (one transaction each; `prepared` may be a generator, so
    one run is in memory at a time); a run whose origin is already in the database is
    left out and said so."""
    with open_store(args.db) as store:
        new, again, spools = [], [], []
        for p in prepared:
            before = already_here(store, p)
            if p.origin.get("format") == "rtgauge spool":
                spools.append(Path(p.where))
            if before is not None:
                again.append((p.what, p.where, before))
                continue
            new.append((p.what, p.where, store.import_run(p.run, p.measurements, p.origin)))
            del p
        for what, where, run_id in new:
            say(f"Imported {what} from {where} as run {run_id} in {store.url}.")
        for what, where, run_id in again:
            say(f"{what[:1].upper()}{what[1:]} from {where} was imported before as run {run_id}; nothing stored again.")
    for path in spools:          # its run is stored: the spool file has done its work
        if remove_stored_spool(path):
            say(f"The run of the spool file is stored; removed {path}.")
    return 0


def exportable(run: dict) -> dict:
    """A run read from a database in the shape of an export's run."""
    return {k: v for k, v in run.items() if k not in ("hostname", "kernel_release", "system_id",
                                                         "rtgauge_version", "owner")}


def import_database(args, path: Path) -> int:
    """Every run of another rtgauge database, each checked before any is stored, and
    read one at a time (checked, then read again to store), so the import holds one
    run, whose stored text is bounded as an export file is (rtgauge_database_runs)."""
    if same_file(path, args.db):
        raise UserError(f"{path} is the database being imported into; give another --db.")
    ids = rtgauge_database_runs(path)
    if not ids:
        raise UserError(f"{path} holds no runs; nothing to import.")
    # read a copy: opening a database may upgrade its schema or mark its runs abandoned,
    # and the file being imported is not ours to change
    with tempfile.TemporaryDirectory(prefix="rtgauge-import-") as tmp:
        copy = Path(tmp) / "source.db"
        try:
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{path}{suffix}").exists():
                    shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
        except OSError as e:
            raise UserError(f"cannot copy {path} to read it ({e.strerror}); free space in the temporary "
                            "directory or set TMPDIR.") from None
        with open_store(f"sqlite:///{copy}") as other:
            def run_of(i: int) -> dict:
                try:
                    run = other.get_run(i, documents=True).to_dict()      # an export's form
                except (ValueError, TypeError, RecursionError) as e:
                    raise UserError(f"{path} holds a run rtgauge cannot read ({type(e).__name__}); the database "
                                    "is damaged or not written by rtgauge.") from None
                return check_export_run({"rtgauge_export": EXPORT_FORMAT, "run": exportable(run)}, f"{path} run {i}")

            for i in ids:                   # every run checked before any is stored
                run_of(i)
            return store_prepared(args, (prepared_export_run(run_of(i), str(path), "rtgauge database")
                                         for i in ids))


def dry_read(run: dict, where: str) -> None:
    """Read the run the way show, report, compare and export will; a reader that fails
    on it means the data is not what rtgauge writes."""
    validate.check_clean(run, where)
    stored = validate.as_stored(run)
    try:
        console = SafeConsole(file=io.StringIO(), width=120)
        print_summary(console, stored)
        with contextlib.redirect_stdout(io.StringIO()):
            print_run(stored)
        export_csv(stored)
        export_md(stored)
        render([stored])
    except UserError:
        raise
    except Exception as e:  # the point: whatever our readers trip on is refused here
        raise UserError(f"{where} has the right shape but rtgauge cannot read its contents "
                        f"({type(e).__name__}: {str(e)[:120]}); export it again with `rtgauge export "
                        "RUN --format json`.") from None
