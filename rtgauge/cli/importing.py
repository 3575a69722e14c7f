"""`rtgauge import FILE|DIR`: results measured elsewhere into the store —
- a JSON export (`rtgauge export RUN --format json` on another machine),
- another rtgauge database (an SQLite file: every run in it),
- a directory of engine JSON documents (or one document) copied from a board that
  has no Python: one new run whose system facts come from the documents' env.
  A document named NAME@CONDITION.json is measurement NAME@CONDITION under load
  CONDITION; other names take --condition (default idle).
Everything is read and checked before anything is stored."""

from __future__ import annotations

from pathlib import Path

from rtgauge.errors import UserError

FINAL = ("complete", "interrupted", "failed", "abandoned")
SQLITE_MAGIC = b"SQLite format 3\x00"


def register(sub) -> None:
    p = sub.add_parser("import", help="import results measured elsewhere",
                       description="Store runs from an rtgauge JSON export, another rtgauge SQLite database, or "
                       "a directory of engine JSON documents (a board without Python).")
    p.add_argument("source", metavar="FILE|DIR|-",
                   help="export file, database file, engine document or directory of them; - reads standard input")
    p.add_argument("--db", metavar="URL", default=None, help="results database to import into (default: the user's)")
    p.add_argument("--condition", default="idle",
                   help="load condition of engine documents whose name does not say it (NAME@CONDITION.json); default idle")
    p.set_defaults(func=cmd_import)


def job_of(m: dict) -> dict:
    return {k: m.get(k) for k in ("name", "tool", "test", "condition", "reference", "load", "started_at",
                                  "duration_s", "exit_status", "command", "error")}


def check_export_run(data, where: str) -> dict:
    """The export's run, checked by the schema and read as show/report will read it."""
    from rtgauge.store import validate
    run = validate.check_export(data, where)
    dry_read(run, where)
    return run


def discard(store, run_id: int) -> None:
    """An import that failed half-way leaves nothing: its run goes (best effort: the
    database may be what failed; then a dead importer's run is marked abandoned later)."""
    try:
        store.delete_run(run_id)
    except Exception:
        pass


def store_run(store, run: dict, source: str) -> int:
    """One stored run from a complete run dict (an export's or another database's)."""
    status = run.get("status") if run.get("status") in FINAL else "interrupted"
    note = (f"imported from {source}: run {run.get('id')} measured {run.get('started_at')} to "
            f"{run.get('finished_at')}" + (f"; {run['note']}" if run.get("note") else ""))
    run_id = store.begin_run(run["system"], run.get("doctor") or [], str(run.get("profile") or "imported"),
                             str(run.get("profile_source") or f"imported:{source}"), list(run.get("argv") or []))
    try:
        for m in run["measurements"]:
            store.add_measurement(run_id, job_of(m), m["document"])
    except BaseException:
        discard(store, run_id)
        raise
    store.finish_run(run_id, status, note)
    return run_id


def read_json(path: Path):
    from rtgauge.store import validate
    return validate.read_json_file(path)


def is_engine_document(doc) -> bool:
    return isinstance(doc, dict) and "test" in doc and "schema" in doc and isinstance(doc.get("metrics", {}), dict)


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
    from rtgauge.store import validate
    docs = []
    for path in paths:
        doc = read_json(path)
        if not is_engine_document(doc):
            raise UserError(f"{path} is not an engine JSON document (it has no 'schema' and 'test'); "
                            "remove it from the directory or give the file alone.")
        validate.check_engine_document(doc, str(path))
        name = path.stem
        cond = name.split("@", 1)[1] if "@" in name else condition
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


def rtgauge_database_runs(path: Path) -> list[int]:
    """Run ids of another rtgauge SQLite database, read-only (never creates tables there)."""
    import sqlite3
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"runs", "measurements", "schema_version"} <= tables:
                raise UserError(f"{path} is an SQLite database but not an rtgauge results database; "
                                "give an rtgauge database, export or engine documents.")
            return [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id")]
        finally:
            con.close()
    except sqlite3.Error as e:
        raise UserError(f"cannot read the database {path} ({e}); check the file.") from None


def cmd_import(args) -> int:
    import shutil
    import tempfile
    if args.source != "-":
        return import_source(args, Path(args.source))
    # standard input: kept in a private temporary file, then read as any file would be
    import sys
    with tempfile.TemporaryDirectory(prefix="rtgauge-import-") as tmp:
        path = Path(tmp) / "stdin"
        with open(path, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        if path.stat().st_size == 0:
            raise UserError("standard input is empty; pipe an export, a database or an engine document into "
                            "`rtgauge import -`.")
        return import_source(args, path)


def import_source(args, source: Path) -> int:
    from rtgauge.store import open_store
    from rtgauge.report.safe import say
    if not source.exists():
        raise UserError(f"{source} does not exist; give an export file, a database or a directory of engine documents.")
    if source.is_dir():
        paths = sorted(p for p in source.iterdir() if p.suffix == ".json" and p.is_file())
        if not paths:
            raise UserError(f"{source} holds no .json engine documents; copy the engine's --out files there.")
        return import_documents(args, paths, str(source))
    if not source.is_file():
        raise UserError(f"{source} is not a regular file (a device, pipe or socket); give an export file, a "
                        "database or a directory of engine documents.")
    with open(source, "rb") as f:
        magic = f.read(len(SQLITE_MAGIC))
    if magic == SQLITE_MAGIC:
        return import_database(args, source)
    data = read_json(source)
    if isinstance(data, dict) and "rtgauge_export" in data:
        if data["rtgauge_export"] != 1:
            raise UserError(f"{source} is export format {str(data['rtgauge_export'])[:40]}, which this rtgauge "
                            "does not read; upgrade rtgauge.")
        run = check_export_run(data, str(source))
        with open_store(args.db) as store:
            run_id = store_run(store, run, source.name)
            say(f"Imported run {run.get('id')} of {run['system'].get('hostname')} from {source} as run {run_id} "
                f"in {store.url}.")
        return 0
    if is_engine_document(data):
        return import_documents(args, [source], str(source))
    raise UserError(f"{source} is neither an rtgauge export nor an engine document; make one with "
                    "`rtgauge export RUN --format json` or the engine's --out.")


def import_documents(args, paths: list[Path], where: str) -> int:
    from rtgauge.store import open_store
    from rtgauge.report.safe import say
    facts, docs = engine_documents(paths, args.condition)
    with open_store(args.db) as store:
        run_id = store.begin_run(facts, [], "imported", f"engine documents from {where}",
                                 ["rtgauge", "import", where])
        try:
            for job, doc in docs:
                store.add_measurement(run_id, job, doc)
        except BaseException:
            discard(store, run_id)
            raise
        failed = sum(1 for _, d in docs if d.get("ok") is not True)
        store.finish_run(run_id, "complete", f"imported {len(docs)} engine documents from {where}"
                         + (f", {failed} not ok" if failed else ""))
        say(f"Imported {len(docs)} engine document{'s' if len(docs) != 1 else ''} of "
              f"{facts.get('hostname') or '?'} as run {run_id} in {store.url}.")
    return 0


def exportable(run: dict) -> dict:
    """A run read from a database in the shape of an export's run."""
    return {k: v for k, v in run.items() if k not in ("hostname", "kernel_release", "system_id",
                                                         "rtgauge_version")}


def import_database(args, path: Path) -> int:
    import shutil
    import tempfile
    from rtgauge.store import open_store
    from rtgauge.report.safe import say
    ids = rtgauge_database_runs(path)
    if not ids:
        raise UserError(f"{path} holds no runs; nothing to import.")
    # read a copy: opening a database may upgrade its schema or mark its runs abandoned,
    # and the file being imported is not ours to change
    with tempfile.TemporaryDirectory(prefix="rtgauge-import-") as tmp:
        copy = Path(tmp) / "source.db"
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{path}{suffix}").exists():
                shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
        with open_store(f"sqlite:///{copy}") as other:
            try:
                runs = [other.get_run(i, documents=True) for i in ids]
            except (ValueError, TypeError, RecursionError) as e:
                raise UserError(f"{path} holds a run rtgauge cannot read ({type(e).__name__}); the database "
                                "is damaged or not written by rtgauge.") from None
    for run in runs:
        where = f"{path} run {run.get('id')}"
        check_export_run({"rtgauge_export": 1, "run": exportable(run)}, where)
    with open_store(args.db) as store:
        if store.url.endswith(str(path.resolve())):
            raise UserError(f"{path} is the database being imported into; give another --db.")
        new = [store_run(store, run, path.name) for run in runs]
        say(f"Imported {len(new)} run{'s' if len(new) != 1 else ''} from {path} as runs "
              f"{', '.join(map(str, new))} in {store.url}.")
    return 0


def dry_read(run: dict, where: str) -> None:
    """Read the run the way show, report, compare and export will; a reader that fails
    on it means the data is not what rtgauge writes."""
    from rtgauge.store import validate
    import io

    from rtgauge.cli.export import export_csv, export_md
    from rtgauge.cli.show import print_run
    from rtgauge.report.html import render
    from rtgauge.report.safe import SafeConsole
    from rtgauge.report.terminal import print_summary

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
