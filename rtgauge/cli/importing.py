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

import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path

from rtgauge.bounds import RUN_RANGE_MAX
from rtgauge.cli.common import add_db_option
from rtgauge.errors import UserError
from rtgauge.records import EXPORT_FORMAT, Run


class _Later:
    """A module imported when first used, so `rtgauge --help` does not load jsonschema,
    SQLAlchemy and rich (the command line imports every subcommand's module)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        import importlib
        return getattr(importlib.import_module(self._name), attr)


validate = _Later("rtgauge.store.validate")


def open_store(url):
    from rtgauge.store import open_store as opened
    return opened(url)


def say(text="", **kwargs) -> None:
    from rtgauge.report.safe import say as said
    said(text, **kwargs)

FINAL = ("complete", "interrupted", "failed", "abandoned")
SQLITE_MAGIC = b"SQLite format 3\x00"
CONDITION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}", re.ASCII)
JOB_NAME = re.compile(r"[^\x00-\x1f\x7f-\x9f/]{1,200}")
DOCUMENTS_MAX = 10_000          # engine documents of one directory (a run's jobs)


@dataclass
class Prepared:
    """One run ready to store: checked, dry-read, with its origin."""
    run: dict
    measurements: list[tuple[dict, dict]]
    origin: dict
    what: str                       # for the message: "run 3 of host-a", "cyclictest --json file"
    where: str = ""
    extra: dict = field(default_factory=dict)


def register(sub) -> None:
    p = sub.add_parser("import", help="import results measured elsewhere",
                       description="Store runs from an rtgauge JSON export, another rtgauge SQLite database, "
                       "a directory of engine JSON documents (a board without Python), cyclictest's "
                       "--json file or -h/--histfile histogram, rtla timerlat hist output, jitterdebugger's "
                       "results (results.json or its -o directory), or stress-ng's log of a --cyclic run. Each run keeps its original start time and "
                       "its origin; a run imported before is not stored twice.")
    p.add_argument("source", metavar="FILE|DIR|-", help="export file, database file, engine document or directory "
                   "of them, cyclictest --json file or histfile, rtla timerlat hist output, jitterdebugger results.json or "
                   "its -o directory, stress-ng --cyclic log; - reads standard input")
    add_db_option(p)
    p.add_argument("--condition", default="idle",
                   help="load condition of engine documents whose name does not say it (NAME@CONDITION.json) "
                   "and of cyclictest, rtla, jitterdebugger and stress-ng files; 1 to 64 letters, digits, '.', '_', '+' or '-' (default idle)")
    p.set_defaults(func=cmd_import)


def check_condition(value: str) -> str:
    if not CONDITION.fullmatch(value or ""):
        raise UserError(f"--condition {validate.short(value)} is not a condition name; give 1 to 64 letters, "
                        "digits, '.', '_', '+' or '-', starting with a letter or digit (e.g. idle, stress-cpu).")
    return value


def job_of(m: dict) -> dict:
    """How an exported measurement ran. Its round and segment are fields since store
    schema 4; an export of an older rtgauge carried them in the name (`NAME#rK`,
    `NAME#segN`), read here once (the store's migration reads its own rows the same way)."""
    from rtgauge.store.store import split_old_name
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
    from rtgauge.owner import hash_machine_id
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


def is_engine_document(doc) -> bool:
    return isinstance(doc, dict) and "test" in doc and "schema" in doc and isinstance(doc.get("metrics", {}), dict)


def is_cyclictest_json(doc) -> bool:
    return isinstance(doc, dict) and "thread" in doc and ("rt_test_version:" in doc or "file_version" in doc
                                                         or "num_threads" in doc)


def facts_from_env(env: dict) -> dict:
    """System facts for a run measured where rtgauge's Python was not: what the
    engine recorded about its system."""
    return {
        "hostname": env.get("hostname"), "machine_id": None, "kernel_release": env.get("kernel"),
        "kernel_version": env.get("kernel_version"), "arch": env.get("machine"), "cpu_model": None,
        "cpus": env.get("online_cpus"), "preempt_model": env.get("preempt_model"),
        "realtime": env.get("realtime_kernel"), "rt_runtime_us": env.get("sched_rt_runtime_us"),
        "rt_period_us": env.get("sched_rt_period_us"),
        "clocksource": {"current": env.get("clocksource")} if env.get("clocksource") else None,
        "facts_source": "engine documents (imported; rtgauge doctor did not run there)",
    }


def engine_documents(paths: list[Path], condition: str) -> tuple[dict, list[tuple[dict, dict]]]:
    if len(paths) > DOCUMENTS_MAX:
        raise UserError(f"{paths[0].parent} holds {len(paths):,} documents, more than one import takes "
                        f"({DOCUMENTS_MAX:,}); import them from smaller directories.")
    docs = []
    budget, total = validate.import_budget(), [validate.FILE_MAX]   # the directory's together: one file's bounds
    for path in paths:
        doc = validate.read_json_file(path, budget, total)
        if not is_engine_document(doc):
            raise UserError(f"{path} is not an engine JSON document (it has no 'schema' and 'test'); "
                            "remove it from the directory or give the file alone.")
        validate.check_engine_document(doc, str(path))
        name = path.stem
        cond = name.split("@", 1)[1] if "@" in name else condition
        if not JOB_NAME.fullmatch(name) or validate._lone_surrogate(name) or not CONDITION.fullmatch(cond):
            raise UserError(f"{validate.shown_place(str(path))} is not named as rtgauge names a document (NAME.json or "
                            "NAME@CONDITION.json: no control characters, a condition of 1 to 64 letters, digits, "
                            "'.', '_', '+' or '-'); rename it.")
        tool = str(doc.get("tool") or "engine")
        env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
        start, end = env.get("run_start_ns"), env.get("run_end_ns")
        job = {"name": name if "@" in name else f"{name}@{cond}", "tool": tool, "test": str(doc["test"]),
               "condition": cond, "reference": tool != "engine", "load": {"condition": cond, "imported": True},
               "started_at": None, "exit_status": None, "command": [],
               "duration_s": (end - start) / 1e9 if isinstance(start, int) and isinstance(end, int) else None}
        docs.append((job, doc))
    identities = {}
    for job, doc in docs:
        env = doc.get("env") or {}
        identities.setdefault((env.get("hostname"), env.get("kernel"), env.get("kernel_version")), []).append(job["name"])
    if len(identities) > 1:
        systems = "; ".join(f"{h or '?'} {k or '?'}: {', '.join(n)}" for (h, k, _), n in identities.items())
        raise UserError(f"the documents come from {len(identities)} systems ({systems}); import each system's "
                        "documents from its own directory.")
    env = next((d.get("env") for _, d in docs if d.get("env")), {}) or {}
    facts = facts_from_env(env)
    dry_read({"system": facts, "measurements": [dict(job, document=doc) for job, doc in docs]},
             str(paths[0].parent if len(paths) > 1 else paths[0]))
    return facts, docs


def content_identity(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(hashlib.sha256(chunk).digest())
    return "sha256:" + digest.hexdigest()


def prepared_documents(paths: list[Path], where: str, condition: str) -> Prepared:
    facts, docs = engine_documents(paths, condition)
    starts = [d["env"]["run_start_wall"] for _, d in docs
              if isinstance(d.get("env"), dict) and isinstance(d["env"].get("run_start_wall"), str)]
    failed = sum(1 for _, d in docs if d.get("ok") is not True)
    run = {"system": facts, "doctor": [], "profile": "imported", "profile_source": f"engine documents from {where}",
           "argv": ["rtgauge", "import", where], "status": "complete", "started_at": None, "finished_at": None,
           "note": f"imported {len(docs)} engine documents from {where}" + (f", {failed} not ok" if failed else "")}
    if starts:
        run["started_at"] = iso_time(min(starts), where, "run_start_wall")
    origin = {"format": "engine documents", "file": Path(where).name, "identity": content_identity(paths)}
    return Prepared(run, docs, origin,
                    f"{len(docs)} engine document{'s' if len(docs) != 1 else ''} of {facts.get('hostname') or '?'}",
                    where)


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
    from rtgauge.store.urls import normalise_url, sqlite_file
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
    import sys
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
        results = source / "results.json"
        if results.is_file() and not results.is_symlink():
            data = read_json(results)
            from rtgauge.tools import jitterdebugger
            if jitterdebugger.is_results(data):      # the directory `jitterdebugger -o DIR` wrote
                return store_prepared(args, [prepared_jitterdebugger(results, data, condition, source)])
        paths = sorted(p for p in source.iterdir() if p.suffix == ".json" and p.is_file())
        if not paths:
            raise UserError(f"{source} holds no .json engine documents; copy the engine's --out files there.")
        return store_prepared(args, [prepared_documents(paths, str(source), condition)])
    if not source.is_file():
        raise UserError(f"{source} is not a regular file (a device, pipe or socket); give an export file, a "
                        "database or a directory of engine documents.")
    with open(source, "rb") as f:
        head = f.read(4096)
    if head.startswith(SQLITE_MAGIC):
        return import_database(args, source)
    if head.lstrip()[:1] in (b"{", b"["):
        return store_prepared(args, prepared_json(source, condition))
    if head.lstrip().startswith(b"# RTLA timerlat histogram"):
        return store_prepared(args, [prepared_rtla(source, condition)])
    if b"# Histogram" in head or b"# rtgauge measurement " in head:
        return store_prepared(args, [prepared_histfile(source, condition)])
    if b"cyclic: " in head or head.startswith(b"stress-ng: "):
        return store_prepared(args, [prepared_stressng(source, condition)])
    raise UserError(f"{source} is neither an rtgauge export, an engine document nor a cyclictest --json file or "
                    "histfile; make one with `rtgauge export RUN --format json` or the engine's --out.")


def prepared_json(source: Path, condition: str) -> list[Prepared]:
    data = read_json(source)
    if isinstance(data, dict) and "rtgauge_export" in data:
        if data["rtgauge_export"] != EXPORT_FORMAT:
            raise UserError(f"{source} is export format {str(data['rtgauge_export'])[:40]}, which this rtgauge "
                            "does not read; upgrade rtgauge.")
        run = check_export_run(data, str(source))
        if "spooled_because" in data:
            # a spool file (rtgauge/store/spool.py): the whole of a run whose database failed
            # mid-run; that database's copy of it is the partial one, so it is not "already here"
            return [prepared_export_run(run, str(source), "rtgauge spool")]
        return [prepared_export_run(run, str(source), "rtgauge export")]
    if is_engine_document(data):
        return [prepared_documents([source], str(source), condition)]
    if is_cyclictest_json(data):
        return [prepared_cyclictest_json(source, data, condition)]
    from rtgauge.tools import jitterdebugger
    if jitterdebugger.is_results(data):
        return [prepared_jitterdebugger(source, data, condition, None)]
    raise UserError(f"{source} is neither an rtgauge export, an engine document, a cyclictest --json file nor "
                    "jitterdebugger's results.json; make one with `rtgauge export RUN --format json` or the "
                    "engine's --out.")


def foreign_job(name: str, condition: str, tool: str, command: list[str]) -> dict:
    return {"name": f"{name}@{condition}", "tool": tool, "test": "latency", "condition": condition,
            "reference": True, "load": {"condition": condition, "imported": True}, "started_at": None,
            "duration_s": None, "exit_status": None, "command": command, "error": None}


def foreign_run(facts: dict, fmt: str, source: Path, started: str | None, finished: str | None,
                docs: list[tuple[dict, dict]], detail: str) -> Prepared:
    where = str(source)
    run = {"system": facts, "doctor": [], "profile": "imported", "profile_source": f"{fmt} file {source.name}",
           "argv": ["rtgauge", "import", where], "status": "complete", "started_at": started,
           "finished_at": finished, "note": f"imported from {fmt} {source.name}" + (f" ({detail})" if detail else "")}
    dry_read({"system": facts, "measurements": [dict(job, document=doc) for job, doc in docs]}, where)
    return Prepared(run, docs, {"format": fmt, "file": source.name, "identity": content_identity([source])},
                    f"{fmt} of {facts.get('hostname') or 'an unnamed system'}", where)


def prepared_cyclictest_json(source: Path, data: dict, condition: str) -> Prepared:
    from rtgauge.tools import cyclictest
    where = str(source)
    validate.check_schema(data, cyclictest.JSON_SCHEMA, where, "cyclictest --json file",
                          "give cyclictest's --json output unchanged.")
    validate.check_no_nul(data, where)
    try:
        doc = cyclictest.document_of_json(data)
    except ValueError as e:
        raise UserError(f"{where} is not a valid cyclictest --json file: {e}; give cyclictest's --json output "
                        "unchanged.") from None
    validate.check_engine_document(doc, where)
    cmdline = str(data.get("cmdline:") or "")
    job = foreign_job("cyclictest", condition, "cyclictest", cmdline.split()[:200])
    version = data.get("rt_test_version:")

    def when(key):
        try:
            return parsedate_to_datetime(data[key]).astimezone(timezone.utc).isoformat(timespec="seconds")
        except (KeyError, TypeError, ValueError, IndexError):
            return None
    start, end = when("start_time"), when("end_time")
    if start and end:
        job["duration_s"] = max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())
    job["started_at"] = start
    job["exit_status"] = data.get("return_code")
    return foreign_run(cyclictest.facts_of_json(data), "cyclictest --json", source, start, end, [(job, doc)],
                       ", ".join(x for x in (f"rt-tests {version}" if version else "",
                                             f"command: {cmdline[:300]}" if cmdline else "") if x))


def prepared_jitterdebugger(source: Path, data: dict, condition: str, directory: Path | None) -> Prepared:
    """jitterdebugger's results.json; directory: the one `jitterdebugger -o DIR` wrote (its
    copies of the system's files give the facts)."""
    from rtgauge.tools import jitterdebugger
    where = str(source)
    if isinstance(data.get("version"), int) and data["version"] not in jitterdebugger.VERSIONS:
        raise UserError(f"{where} is jitterdebugger results version {data['version']}, which this rtgauge does not "
                        f"read (it reads {', '.join(map(str, jitterdebugger.VERSIONS))}); upgrade rtgauge.")
    validate.check_schema(data, jitterdebugger.RESULTS_SCHEMA, where, "jitterdebugger results.json",
                          "give the results.json jitterdebugger wrote, unchanged.")
    try:
        doc = jitterdebugger.document(data)
    except ValueError as e:
        raise UserError(f"{where} is not a valid jitterdebugger results.json: {e}; give the file jitterdebugger "
                        "wrote, unchanged.") from None
    validate.check_engine_document(doc, where)
    job = foreign_job("jitterdebugger", condition, "jitterdebugger", [])
    unit = "ns" if jitterdebugger.unit_ns(data) == 1 else "µs"
    threads = len(data["cpu"])
    return foreign_run(jitterdebugger.facts(data, directory), "jitterdebugger results", source, None, None,
                       [(job, doc)], f"{threads} measuring thread{'s' if threads != 1 else ''}, counted in {unit}"
                       + (f", system files from {directory}" if directory is not None else "")
                       + "; the file has no interval, priority or start time")


def prepared_stressng(source: Path, condition: str) -> Prepared:
    """stress-ng's log of a --cyclic run (its --log-file, or its stderr kept)."""
    from rtgauge.tools import stressng
    where = str(source)
    try:
        report = stressng.parse(validate.read_text_file(source))
        doc = stressng.document(report)
    except ValueError as e:
        raise UserError(f"{where} is not a stress-ng --cyclic log rtgauge reads: {e}; give the --log-file (or "
                        "stderr) of one `stress-ng --cyclic 1` run, unchanged.") from None
    validate.check_engine_document(doc, where)
    facts = {"hostname": None, "machine_id": None, "kernel_release": None, "kernel_version": None, "arch": None,
             "cpu_model": None, "cpus": None, "preempt_model": None,
             "facts_source": "none: a stress-ng log records no system facts"}
    job = foreign_job("stress-ng-cyclic", condition, "stress-ng", [])
    return foreign_run(facts, "stress-ng cyclic log", source, None, None, [(job, doc)],
                       f"{report['policy']}, {report['delay_ns']:,} ns delay; {stressng.kept_note(report)}; the log "
                       "has no system facts or start time")


def prepared_histfile(source: Path, condition: str) -> Prepared:
    from rtgauge.tools import cyclictest
    where = str(source)
    text = validate.read_text_file(source)
    try:
        blocks = cyclictest.parse_histfile(text, where)
        docs = []
        for i, block in enumerate(blocks):
            label = block["label"] or ("cyclictest" if len(blocks) == 1 else f"cyclictest-{i + 1}")
            name, _, cond = label.partition("@")
            name = re.sub(r"[^A-Za-z0-9._+-]", "-", name)[:64] or "cyclictest"
            cond = cond if CONDITION.fullmatch(cond or "") else condition
            docs.append((foreign_job(name, cond, "cyclictest", []), cyclictest.document_of_histfile(block)))
    except ValueError as e:
        raise UserError(f"{where} is not a cyclictest histfile rtgauge reads: {e}; give the file cyclictest's "
                        "-h/--histfile wrote, unchanged.") from None
    for _, doc in docs:
        validate.check_engine_document(doc, where)
    names = [job["name"] for job, _ in docs]
    if len(set(names)) != len(names):
        raise UserError(f"{where} holds two histograms named the same ({names}); give each a distinct "
                        "'# rtgauge measurement NAME@CONDITION' line.")
    facts = {"hostname": None, "machine_id": None, "kernel_release": None, "kernel_version": None, "arch": None,
             "cpu_model": None, "cpus": None, "preempt_model": None,
             "facts_source": "none: a cyclictest histfile records no system facts"}
    return foreign_run(facts, "cyclictest histfile", source, None, None, docs,
                       f"{len(docs)} histogram{'s' if len(docs) != 1 else ''}; the layout has no system facts, "
                       "interval or start time")


def prepared_rtla(source: Path, condition: str) -> Prepared:
    from rtgauge.tools import rtla
    where = str(source)
    try:
        doc = rtla.document(rtla.parse(validate.read_text_file(source)))
    except ValueError as e:
        raise UserError(f"{where} is not `rtla timerlat hist` output rtgauge reads: {e}; give rtla's output "
                        "unchanged.") from None
    validate.check_engine_document(doc, where)
    facts = {"hostname": None, "machine_id": None, "kernel_release": None, "kernel_version": None, "arch": None,
             "cpu_model": None, "cpus": None, "preempt_model": None,
             "facts_source": "none: rtla timerlat hist output records no system facts"}
    job = foreign_job("timerlat", condition, "rtla-timerlat", [])
    return foreign_run(facts, "rtla timerlat hist", source, None, None, [(job, doc)],
                       f"duration {doc['env']['duration'] or '?'}; the output has no system facts or start time")


def store_prepared(args, prepared) -> int:
    """Store each prepared run (one transaction each; `prepared` may be a generator, so
    one run is in memory at a time); a run whose origin is already in the database is
    left out and said so."""
    with open_store(args.db) as store:
        new, again = [], []
        for p in prepared:
            before = already_here(store, p)
            if before is not None:
                again.append((p.what, p.where, before))
                continue
            new.append((p.what, p.where, store.import_run(p.run, p.measurements, p.origin)))
            del p
        for what, where, run_id in new:
            say(f"Imported {what} from {where} as run {run_id} in {store.url}.")
        for what, where, run_id in again:
            say(f"{what[:1].upper()}{what[1:]} from {where} was imported before as run {run_id}; nothing stored again.")
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
    import io

    from rtgauge.report.exports import export_csv, export_md
    from rtgauge.report.runtext import print_run
    from rtgauge.report.html import render
    from rtgauge.report.safe import SafeConsole
    from rtgauge.report.terminal import print_summary

    validate.check_clean(run, where)
    stored = validate.as_stored(run)
    try:
        console = SafeConsole(file=io.StringIO(), width=120)
        print_summary(console, stored)
        import contextlib
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
