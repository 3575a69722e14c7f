"""The results store: one relational database (SQLite or PostgreSQL) through
SQLAlchemy Core. Every public write is its own transaction, so a run that dies
keeps every measurement stored before it died."""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import threading

import contextlib
from datetime import datetime, timezone
from typing import Callable, Iterator

from sqlalchemy import create_engine, event, func, insert, inspect, select, text, update
from sqlalchemy.engine import Connection, Engine, URL
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from rtgauge import __version__, owner
from rtgauge.errors import UserError
from rtgauge.printable import printable
from rtgauge.records import Measurement, Run
from rtgauge.redact import mask_text, redact_argv
from rtgauge.store import codec, kinds, schema
from rtgauge.store.codec import from_json, to_json
from rtgauge.store.schema import (
    SCHEMA_VERSION,
    histogram_bins,
    histograms,
    measurements,
    metrics,
    runs,
    systems,
    verdicts,
)
from rtgauge.store.urls import display_url, normalise_url, sqlite_file

SYSTEM_IDENTITY = ("hostname", "machine_id", "kernel_release", "kernel_version", "arch", "cpu_model")
FINAL_STATUSES = ("complete", "interrupted", "failed", "abandoned")


def add_run_owner(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE runs ADD COLUMN owner TEXT"))


def add_run_origin(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE runs ADD COLUMN origin TEXT"))
    conn.execute(text("ALTER TABLE runs ADD COLUMN origin_key TEXT"))
    conn.execute(text("CREATE INDEX ix_runs_origin_key ON runs (origin_key)"))


def round_and_segment_columns(conn: Connection) -> None:
    """Round and segment become columns; the names lose the `#rK` / `#segN` that
    carried them (for K and N the load record also says, load.round / load.segment)."""
    conn.execute(text("ALTER TABLE measurements ADD COLUMN round INTEGER"))
    conn.execute(text("ALTER TABLE measurements ADD COLUMN segment INTEGER"))
    rows = conn.execute(text("SELECT id, name, load FROM measurements WHERE load LIKE '%\"round\"%' "
                             "OR load LIKE '%\"segment\"%'")).all()
    for mid, name, load in rows:
        name, r, seg = split_old_name(name, json_object(from_json(load, {})))
        conn.execute(text("UPDATE measurements SET name = :name, round = :r, segment = :seg WHERE id = :id"),
                     {"name": name, "r": r, "seg": seg, "id": mid})


def split_old_name(name: str, load: dict) -> tuple[str, int | None, int | None]:
    """(the job's name, round, segment) of a measurement named as before schema 4:
    `NAME#rK` with load.round.index K, `NAME#segN` with load.segment.index N (a
    cross-check's `/TOOL` after the round tag: `latency@idle#r2/cyclictest`)."""
    def index(what: str) -> int | None:
        v = json_object(load.get(what)).get("index")
        return v if codec.is_int(v) and v > 0 else None
    r, seg = index("round"), index("segment")
    if seg is not None and name.endswith(f"#seg{seg}"):
        name = name[:-len(f"#seg{seg}")]
    if r is not None:
        base, slash, tool = name.partition("/")
        if base.endswith(f"#r{r}"):
            name = base[:-len(f"#r{r}")] + slash + tool
    return name, r, seg


# version -> function(conn) bringing a database at that version to version + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: add_run_owner, 2: add_run_origin,
                                                       3: round_and_segment_columns}

# One bound for any database operation, in seconds (RTGAUGE_DB_TIMEOUT_S changes it): the
# server's statement_timeout, and a client-side cut for a server that stops answering at all
# (a frozen server still has its kernel acknowledge our packets, so no TCP timeout fires).
# SQLite waits at most 30 s of it for another writer's lock before a write fails (and is
# spooled). Read when a store opens, not at import: a process that imported rtgauge before
# its environment was set (a fork server, an embedding program) still gets its own bound.
def db_timeout_s() -> float:
    try:
        value = float(os.environ.get("RTGAUGE_DB_TIMEOUT_S") or 60)
    except ValueError:
        return 60.0
    return min(max(value, 1.0), 3600.0) if value == value else 60.0

# rtgauge's marker on its database (docs/store.md "Whose database"): SQLite's header field
# application_id ("rtga"), PostgreSQL's comment on the table schema_version.
APPLICATION_ID = 0x72746761
MARKER_TEXT = "rtgauge results store"

# Any constant works; it serialises schema creation between machines that
# open one PostgreSQL database for the first time together.
SCHEMA_LOCK_KEY = 0x72746761


class StoreError(UserError):
    """The database failed while in use (gone away, full, read-only)."""

    exit_status = 1


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def short_reason(error: BaseException, secret: str | None) -> str:
    """The driver's first line, without our own prefix, and never the password."""
    orig = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(orig).strip().splitlines() if line.strip()]
    reason = lines[0] if lines else type(orig).__name__
    return mask_text(reason, (secret,)).rstrip(".")


def open_store(url: str | None = None) -> "Store":
    """Open (creating if needed) the results database at url; None means the
    default SQLite file under the user's data directory."""
    return Store(normalise_url(url))


class Store:
    made = True     # the database is there (store/reading.NoDatabaseYet is the default one not made yet)

    def __init__(self, url: URL):
        self._url = url
        self.url = display_url(url)
        self._engine = self._connect()
        try:
            self._prepare_schema()
        except BaseException:
            self._engine.dispose()
            raise
        self.abandoned = self.mark_abandoned()

    # ---- opening ---------------------------------------------------------

    def _connect(self) -> Engine:
        path = sqlite_file(self._url)
        if path is not None:
            try:       # a device, FIFO or directory is no database: SQLite would put a journal beside it
                if not stat.S_ISREG(os.stat(path).st_mode):
                    raise UserError(f"--db {printable(str(path), 120)} is not a database file (it is a device, FIFO, "
                                    "directory or socket); give a file path.")
            except OSError:
                pass                                        # absent: created below
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise UserError(f"cannot create the directory {path.parent} for the results database "
                                f"({e.strerror}); give a writable path with --db.") from None
        kwargs: dict = {}
        if self._url.get_backend_name() == "sqlite":
            # Wait for a concurrent writer (a run storing while `show` reads).
            kwargs["connect_args"] = {"timeout": min(30.0, db_timeout_s())}
        else:
            # a server that stops answering must not hang a run: bounded connect, statements
            # and (TCP keepalive, user timeout) a vanished peer
            kwargs["connect_args"] = {"connect_timeout": 10,
                                      "options": f"-c statement_timeout={int(db_timeout_s() * 1000)}",
                                      "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                                      "keepalives_count": 3, "tcp_user_timeout": 30000}
            # a connection per transaction (a run writes a few a minute): a pooled one would
            # need a ping first, and a ping to a frozen server blocks outside _client_timeout
            kwargs["poolclass"] = NullPool
        try:
            engine = create_engine(self._url, **kwargs)
        except SQLAlchemyError as e:
            raise UserError(f"cannot use the database URL {self.url}: {short_reason(e, self._url.password)}; "
                            "give a file path, sqlite:///PATH or postgresql://USER@HOST/DB.") from None
        except ImportError as e:
            raise UserError(f"the driver for {self.url} is not installed ({e.name}); "
                            "install rtgauge's dependencies with `pip install .`.") from None
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", enable_sqlite_foreign_keys)
        return engine

    def _prepare_schema(self) -> None:
        # Two processes opening a new SQLite file at once would both find no schema and
        # both create it (pysqlite commits DDL as it goes, so a transaction does not
        # serialise them): hold an exclusive lock on a file beside the database while
        # looking. PostgreSQL serialises this with an advisory lock instead.
        database = self._url.database if self._engine.dialect.name == "sqlite" else None
        if not database or database == ":memory:":
            return self._prepare_schema_once()
        try:       # no lock file beside what is not a database file (`--db /dev/null`: no /dev/null.lock)
            if not stat.S_ISREG(os.stat(database).st_mode):
                return self._prepare_schema_once()
        except OSError:
            pass                                 # absent: it is created, under the lock
        try:
            lock = os.fdopen(os.open(f"{database}.lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
                                     | os.O_CLOEXEC, 0o644), "a")
        except OSError:
            return self._prepare_schema_once()   # a read-only directory: nobody creates there
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._prepare_schema_once()

    def _prepare_schema_once(self) -> None:
        try:
            with self._engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_KEY})
                version = self._stored_version(conn)
                self._refuse_foreign(conn, version)
                if version is None:
                    schema.metadata.create_all(conn)
                    conn.execute(insert(schema.schema_version).values(version=SCHEMA_VERSION, applied_at=utc_now()))
                    self._mark(conn)
                elif version > SCHEMA_VERSION:
                    raise UserError(
                        f"the database {self.url} has store schema version {version}, newer than this "
                        f"rtgauge understands ({SCHEMA_VERSION}); upgrade rtgauge or use another --db.")
                elif version < SCHEMA_VERSION:
                    self._migrate(conn, version)
        except UserError:
            raise
        except (SQLAlchemyError, OSError) as e:
            raise UserError(f"cannot open the results database {self.url}: "
                            f"{short_reason(e, self._url.password)}; check the --db URL, that the "
                            "server is running and that you may write there.") from None

    def _refuse_foreign(self, conn: Connection, version: int | None) -> None:
        """rtgauge writes only into its own database: a new one (no tables), or one with
        every table of its schema, schema_version rows and rtgauge's marker (SQLite: the
        file header's application_id; PostgreSQL: the comment on schema_version). A
        database of rtgauge made before the marker (every table, schema_version rows,
        no marker at all) is rtgauge's and gets the marker now. Anything else is refused
        before any table is created: `show --db other-app.db` made 8 tables in another
        application's file, and one whose own table is named `runs` got the other 7."""
        tables = set(inspect(conn).get_table_names()) - {"sqlite_sequence"}
        marker = self._marker(conn)
        if not tables and marker in (None, True):
            return                                     # new: created, then marked
        ours = set(schema.metadata.tables)
        if marker is False:
            why = "another application's mark"
        elif version is None or ours - tables:
            foreign = sorted(tables - ours)
            missing = sorted(ours - tables)
            why = (f"it holds other tables: {', '.join(f[:40] for f in foreign[:3])}{', …' if len(foreign) > 3 else ''}"
                   if foreign else f"it lacks rtgauge's tables {', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}")
        else:
            if marker is None:
                self._mark(conn)                       # rtgauge's, made before the marker
            return
        raise UserError(f"the database {self.url} is not an rtgauge database ({why}); give rtgauge a database "
                        "of its own with --db.")

    @staticmethod
    def _marker(conn: Connection) -> bool | None:
        """True: rtgauge's marker; None: no marker (a new database, or rtgauge's made
        before the marker); False: another application's (an SQLite application_id of
        its own, a comment on a PostgreSQL table named schema_version that is not ours)."""
        if conn.dialect.name == "sqlite":
            found = conn.execute(text("PRAGMA application_id")).scalar() or 0
            return None if found == 0 else found == APPLICATION_ID
        if not inspect(conn).has_table("schema_version"):
            return None
        found = conn.execute(text("SELECT obj_description(to_regclass('schema_version'), 'pg_class')")).scalar()
        return None if not found else found == MARKER_TEXT

    @staticmethod
    def _mark(conn: Connection) -> None:
        """rtgauge's marker on its database; where it cannot be written (a read-only file,
        a role that does not own the table) the database is still recognised by its tables."""
        try:
            with conn.begin_nested():
                if conn.dialect.name == "sqlite":
                    conn.execute(text(f"PRAGMA application_id = {APPLICATION_ID}"))
                else:
                    conn.execute(text(f"COMMENT ON TABLE schema_version IS '{MARKER_TEXT}'"))
        except SQLAlchemyError:
            pass

    @staticmethod
    def _stored_version(conn: Connection) -> int | None:
        if not inspect(conn).has_table("schema_version"):
            return None
        version = conn.execute(select(func.max(schema.schema_version.c.version))).scalar()
        return None if version is None else int(version)

    def _migrate(self, conn: Connection, version: int) -> None:
        while version < SCHEMA_VERSION:
            step = MIGRATIONS.get(version)
            if step is None:
                raise UserError(f"the database {self.url} has store schema version {version}, which this "
                                f"rtgauge cannot upgrade to {SCHEMA_VERSION}; use another --db.")
            step(conn)
            version += 1
            conn.execute(insert(schema.schema_version).values(version=version, applied_at=utc_now()))

    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[Connection]:
        """One transaction; a database failure becomes one sentence for the user."""
        try:
            with self._engine.begin() as conn:
                with self._client_timeout(conn):
                    yield conn
        except (DBAPIError, OSError) as e:
            raise StoreError(f"the results database {self.url} failed while {doing}: "
                             f"{short_reason(e, self._url.password)}; check that it is reachable "
                             "and writable.") from e

    @contextlib.contextmanager
    def _client_timeout(self, conn: Connection):
        """PostgreSQL: if the transaction is not done after twice db_timeout_s() (the server
        should have cancelled it by then), shut the connection's socket down, so a blocked
        read returns an error instead of waiting forever."""
        if conn.dialect.name != "postgresql":
            yield
            return
        try:
            fd = conn.connection.dbapi_connection.pgconn.socket
        except Exception:
            yield
            return

        def cut():
            try:
                s = socket.socket(fileno=os.dup(fd))
                try:
                    s.shutdown(socket.SHUT_RDWR)
                finally:
                    s.close()
            except OSError:
                pass

        timer = threading.Timer(2 * db_timeout_s(), cut)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    # ---- writing ---------------------------------------------------------

    def begin_run(self, system: dict, doctor: list[dict], profile: str, profile_source: str,
                  argv: list[str]) -> int:
        system_id = self._system_id(system)
        with self._transaction("starting a run") as conn:
            result = conn.execute(insert(runs).values(
                system_id=system_id, started_at=utc_now(), finished_at=None, status="running",
                note="", profile=profile, profile_source=profile_source, argv=to_json(redact_argv(list(argv))),
                system_facts=to_json(system), doctor=to_json(list(doctor)),
                rtgauge_version=__version__, owner=to_json(owner.me()),
            ))
            return int(result.inserted_primary_key[0])

    def import_run(self, run: dict, measurements_: list[tuple[dict, dict]], origin: dict) -> int:
        """A run measured elsewhere, stored whole in one transaction (nothing half-way if
        any of it fails): run is {system, doctor, profile, profile_source, argv, status,
        note, started_at, finished_at}; origin's "identity" marks it for find_import."""
        status = run.get("status")
        if status not in FINAL_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(FINAL_STATUSES)}, not {status!r}")
        system_id = self._system_id(run["system"])
        with self._transaction("importing a run") as conn:
            result = conn.execute(insert(runs).values(
                system_id=system_id, started_at=str(run.get("started_at") or utc_now()),
                finished_at=run.get("finished_at"), status=status, note=str(run.get("note") or ""),
                profile=str(run.get("profile") or "imported"), profile_source=str(run.get("profile_source") or ""),
                argv=to_json(list(run.get("argv") or [])), system_facts=to_json(run["system"]),
                doctor=to_json(list(run.get("doctor") or [])), rtgauge_version=__version__, owner=None,
                origin=to_json(origin), origin_key=str(origin["identity"])))
            run_id = int(result.inserted_primary_key[0])
            for job, doc in measurements_:
                self._insert_measurement(conn, run_id, job, doc)
            return run_id

    def find_import(self, identity: str) -> int | None:
        """The run already imported with this origin identity, if any."""
        with self._transaction("looking for an earlier import") as conn:
            found = conn.execute(select(func.min(runs.c.id)).where(runs.c.origin_key == identity)).scalar()
            return None if found is None else int(found)

    def _system_id(self, system: dict) -> int:
        identity = {key: str(system.get(key) or "") for key in SYSTEM_IDENTITY}
        where = [systems.c[key] == value for key, value in identity.items()]
        with self._transaction("recording the system") as conn:
            found = conn.execute(select(systems.c.id).where(*where)).scalar()
            if found is not None:
                return int(found)
        try:
            with self._transaction("recording the system") as conn:
                cpus = system.get("cpus")
                result = conn.execute(insert(systems).values(
                    **identity, cpus=cpus if codec.is_int(cpus) else None,
                    preempt_model=None if system.get("preempt_model") is None else str(system["preempt_model"]),
                    first_seen=utc_now()))
                return int(result.inserted_primary_key[0])
        except StoreError as e:
            # Another machine or process inserted the same system meanwhile.
            if not isinstance(e.__cause__, IntegrityError):
                raise
        with self._transaction("recording the system") as conn:
            return int(conn.execute(select(systems.c.id).where(*where)).scalar_one())

    def add_measurement(self, run_id: int, job: dict, doc: dict) -> int:
        """Store one job's result, all of it in one transaction."""
        with self._transaction(f"storing measurement {job.get('name', '?')}") as conn:
            if conn.execute(select(runs.c.id).where(runs.c.id == run_id)).scalar() is None:
                raise ValueError(f"no run {run_id} in {self.url}")
            return self._insert_measurement(conn, run_id, job, doc)

    @staticmethod
    def _insert_measurement(conn: Connection, run_id: int, job: dict, doc: dict) -> int:
        doc = doc if isinstance(doc, dict) else {}
        result = conn.execute(insert(measurements).values(**measurement_row(run_id, job, doc)))
        measurement_id = int(result.inserted_primary_key[0])
        metric_docs = doc.get("metrics")
        if isinstance(metric_docs, dict):
            info = kinds.declared_test(job, doc)
            for name, metric in metric_docs.items():
                if isinstance(metric, dict):
                    insert_metric(conn, measurement_id, str(name), metric, kinds.metric_kind(info, str(name), metric))
        verdict_rows = verdict_rows_of(measurement_id, doc.get("verdicts"))
        if verdict_rows:
            conn.execute(insert(verdicts), verdict_rows)
        return measurement_id

    def finish_run(self, run_id: int, status: str, note: str = "") -> None:
        if status not in FINAL_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(FINAL_STATUSES)}, not {status!r}")
        with self._transaction("finishing the run") as conn:
            result = conn.execute(update(runs).where(runs.c.id == run_id).values(
                status=status, note=note or "", finished_at=utc_now()))
            if result.rowcount == 0:
                raise ValueError(f"no run {run_id} in {self.url}")

    def reopen_run(self, run_id: int, drop: list[int]) -> None:
        """A run that stopped before its end (interrupted, abandoned, failed) measured on by
        `run --resume`: running again, owned by this process; the measurements in drop (the
        jobs it measures again: failed, interrupted or stopped early) are removed in the same
        transaction, so each job is stored once."""
        with self._transaction(f"resuming run {run_id}") as conn:
            result = conn.execute(update(runs).where(runs.c.id == run_id, runs.c.status != "running").values(
                status="running", finished_at=None, owner=to_json(owner.me())))
            if result.rowcount == 0:
                raise ValueError(f"run {run_id} cannot be resumed in {self.url}")
            if drop:
                conn.execute(measurements.delete().where(measurements.c.run_id == run_id,
                                                         measurements.c.id.in_(drop)))

    def failed_measurements(self, run_id: int) -> int:
        """How many of the run's measurements are stored failed (a job whose load died
        is failed here though its engine document says ok)."""
        with self._transaction(f"reading run {run_id}") as conn:
            return conn.execute(select(func.count()).select_from(measurements).where(
                measurements.c.run_id == run_id, measurements.c.ok.is_not(True))).scalar_one()

    def mark_abandoned(self) -> list[int]:
        """Runs left "running" by a process that is gone (killed, crashed, rebooted):
        marked "abandoned", what they stored kept. Runs of other machines, and of
        live processes, are left alone. Returns the ids marked; a database that cannot
        be written (read-only) is left as it is."""
        marked = []
        try:
            with self._transaction("looking for abandoned runs") as conn:
                rows = conn.execute(select(runs.c.id, runs.c.owner).where(runs.c.status == "running")).all()
                for run_id, owner_json in rows:
                    try:
                        who = from_json(owner_json, None)
                    except ValueError:
                        continue
                    if owner.alive(who) is False:
                        conn.execute(update(runs).where(runs.c.id == run_id, runs.c.status == "running").values(
                            status="abandoned", finished_at=utc_now(),
                            note=f"abandoned: the rtgauge process (pid {who.get('pid')}) that ran it ended "
                                 "without finishing it; its stored measurements are kept"))
                        marked.append(int(run_id))
        except (StoreError, SQLAlchemyError):
            return []
        return marked

    def running_elsewhere(self, run_id: int) -> list[dict]:
        """Other runs measuring now, on this machine, into this database."""
        out = []
        with self._transaction("reading runs") as conn:
            for rid, owner_json in conn.execute(select(runs.c.id, runs.c.owner).where(
                    runs.c.status == "running", runs.c.id != run_id)):
                try:
                    who = from_json(owner_json, None)
                except ValueError:
                    continue
                if owner.alive(who):
                    out.append({"id": int(rid), "pid": who.get("pid")})
        return out

    def delete_run(self, run_id: int) -> None:
        """Remove a run and everything under it (an import that could not finish)."""
        with self._transaction(f"removing run {run_id}") as conn:
            conn.execute(runs.delete().where(runs.c.id == run_id))

    # ---- reading ---------------------------------------------------------

    def latest_run_id(self) -> int | None:
        with self._transaction("reading runs") as conn:
            found = conn.execute(select(func.max(runs.c.id))).scalar()
            return None if found is None else int(found)

    def list_runs(self, limit: int | None = None) -> list[dict]:
        count = (select(func.count(measurements.c.id))
                 .where(measurements.c.run_id == runs.c.id).scalar_subquery())
        query = (select(runs.c.id, runs.c.started_at, runs.c.finished_at, runs.c.status, runs.c.note,
                        runs.c.profile, systems.c.hostname, systems.c.kernel_release,
                        count.label("measurements"))
                 .join(systems, systems.c.id == runs.c.system_id)
                 .order_by(runs.c.id.desc()))
        if limit is not None:
            query = query.limit(limit)
        with self._transaction("reading runs") as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def get_run(self, run_id: int, documents: bool = True) -> Run | None:
        """The run with its measurements, as records (rtgauge/records.py: the one
        conversion from the stored rows; `Run.to_dict()` gives the export's dict);
        documents=False leaves out each measurement's original engine document
        (everything in it is also in the other fields), which halves the time to read
        a run for a report."""
        with self._transaction(f"reading run {run_id}") as conn:
            row = conn.execute(
                select(runs, systems.c.hostname, systems.c.kernel_release)
                .join(systems, systems.c.id == runs.c.system_id)
                .where(runs.c.id == run_id)).first()
            if row is None:
                return None
            run = dict(row._mapping)
            run["argv"] = redact_argv(from_json(run["argv"], []))   # a run stored before argv was redacted
            run["system"] = from_json(run.pop("system_facts"), {})
            run["doctor"] = from_json(run["doctor"], [])
            run["owner"] = from_json(run.get("owner"), None)
            run["origin"] = from_json(run.get("origin"), None)
            run.pop("origin_key", None)
            return Run.from_dict(run, read_measurements(conn, run_id, documents))

    # ---- lifetime --------------------------------------------------------

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def enable_sqlite_foreign_keys(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def json_object(value) -> dict:
    return value if isinstance(value, dict) else {}


def index_of(value) -> int | None:
    """A round's or segment's index as stored: 1..2**31-1, else NULL."""
    return value if codec.is_int(value) and 0 < value < 2**31 else None


def measurement_row(run_id: int, job: dict, doc: dict) -> dict:
    duration = job.get("duration_s")
    exit_status = job.get("exit_status")
    # A tool that died before printing its document leaves the reason in the job.
    error = doc.get("error") or job.get("error")
    load = json_object(job.get("load"))
    load_ok = load.get("ok") is not False      # loads.judge_delivery: the load died mid-measurement
    if not load_ok:
        error = f"{error}; " if error else ""
        error += str(load.get("problem") or "the load died during the measurement")
    return {
        "run_id": run_id,
        "name": str(job.get("name") or job.get("test") or doc.get("test") or "?"),
        "tool": str(job.get("tool") or "engine"),
        "test": str(job.get("test") or doc.get("test") or ""),
        "condition": str(job.get("condition") or ""),
        "reference": bool(job.get("reference", False)),
        "round": index_of(job.get("round")),
        "segment": index_of(job.get("segment")),
        "ok": doc.get("ok") is True and load_ok,
        "interrupted": doc.get("interrupted") is True,
        "error": None if error is None else str(error),
        "exit_status": exit_status if codec.is_int(exit_status) else None,
        "params": to_json(json_object(doc.get("params"))),
        "env": to_json(json_object(doc.get("env"))),
        "load": to_json(json_object(job.get("load"))),
        "command": to_json([str(a) for a in job.get("command") or []]),
        "started_at": None if job.get("started_at") is None else str(job["started_at"]),
        "duration_s": float(duration) if isinstance(duration, (int, float)) else None,
        "document": to_json(doc),
        "stored_at": utc_now(),
    }


def insert_metric(conn: Connection, measurement_id: int, name: str, metric: dict, kind: str) -> None:
    row, arrays = codec.metric_rows(name, metric, kind)
    result = conn.execute(insert(metrics).values(measurement_id=measurement_id, **row))
    metric_id = int(result.inserted_primary_key[0])
    for array in arrays:
        result = conn.execute(insert(histograms).values(metric_id=metric_id, layout=array.layout, **array.row))
        if array.bins:
            histogram_id = int(result.inserted_primary_key[0])
            conn.execute(insert(histogram_bins), [
                {"histogram_id": histogram_id, "seq": seq, "lo_ns": lo, "hi_ns": hi, "count": n}
                for seq, (lo, hi, n) in enumerate(array.bins)
            ])


def verdict_rows_of(measurement_id: int, verdict_docs) -> list[dict]:
    if not isinstance(verdict_docs, dict):
        return []
    rows = []
    for name, verdict in verdict_docs.items():
        verdict = verdict if isinstance(verdict, dict) else {"pass": verdict}
        rows.append({"measurement_id": measurement_id, "name": str(name),
                     "pass": verdict.get("pass") is True, "detail": str(verdict.get("detail") or "")})
    return rows


def read_measurements(conn: Connection, run_id: int, documents: bool = True) -> list[Measurement]:
    columns = measurements.c if documents else [c for c in measurements.c if c.name != "document"]
    rows = conn.execute(select(*columns).where(measurements.c.run_id == run_id)
                        .order_by(measurements.c.id)).all()
    ids = [row.id for row in rows]
    if not ids:
        return []
    metric_rows = conn.execute(select(metrics).where(metrics.c.measurement_id.in_(ids))
                               .order_by(metrics.c.id)).all()
    arrays_by_metric: dict[int, list[dict]] = {}
    for array in conn.execute(select(histograms).join(metrics, metrics.c.id == histograms.c.metric_id)
                              .where(metrics.c.measurement_id.in_(ids)).order_by(histograms.c.id)):
        arrays_by_metric.setdefault(array.metric_id, []).append(dict(array._mapping))
    metrics_by_measurement: dict[int, dict] = {i: {} for i in ids}
    for metric in metric_rows:
        rebuilt = codec.metric_from_rows(dict(metric._mapping), arrays_by_metric.get(metric.id, []))
        metrics_by_measurement[metric.measurement_id][metric.name] = {"kind": metric.kind, **rebuilt}
    verdicts_by_measurement: dict[int, dict] = {i: {} for i in ids}
    for verdict in conn.execute(select(verdicts).where(verdicts.c.measurement_id.in_(ids))
                                .order_by(verdicts.c.id)):
        verdicts_by_measurement[verdict.measurement_id][verdict.name] = {
            "pass": bool(verdict._mapping["pass"]), "detail": verdict.detail}
    out = []
    for row in rows:
        m = dict(row._mapping)
        m.pop("run_id")
        for key in ("params", "env", "load"):
            m[key] = from_json(m[key], {})
        m["command"] = from_json(m["command"], [])
        m["reference"], m["ok"], m["interrupted"] = bool(m["reference"]), bool(m["ok"]), bool(m["interrupted"])
        for key in ("round", "segment"):        # a job measured once has neither
            if m[key] is None:
                del m[key]
        m["load_ok"] = m["load"].get("ok") is not False if isinstance(m["load"], dict) else True
        m["metrics"] = metrics_by_measurement[row.id]
        m["verdicts"] = verdicts_by_measurement[row.id]
        if documents:
            m["document"] = from_json(m["document"], {})
        out.append(Measurement.from_dict(m))
    return out
