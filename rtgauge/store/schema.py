"""The relational schema of the results store (documented in docs/store.md).

Types are chosen to mean the same on SQLite and PostgreSQL: BigInteger for
nanoseconds and counts, Float for statistics, Text for JSON and for timestamps
(UTC ISO 8601 strings, so both backends return exactly what was written).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

# Bump when the tables change, and add a step to MIGRATIONS in store.py.
SCHEMA_VERSION = 4

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", Text, nullable=False),
)

# One row per machine+kernel identity; the full facts live with each run
# because they (governor, isolation, ...) can change between runs.
systems = Table(
    "systems",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("hostname", Text, nullable=False),
    Column("machine_id", Text, nullable=False),
    Column("kernel_release", Text, nullable=False),
    Column("kernel_version", Text, nullable=False),
    Column("arch", Text, nullable=False),
    Column("cpu_model", Text, nullable=False),
    Column("cpus", Integer),
    Column("preempt_model", Text),
    Column("first_seen", Text, nullable=False),
    UniqueConstraint(
        "hostname", "machine_id", "kernel_release", "kernel_version", "arch", "cpu_model",
        name="systems_identity",
    ),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("system_id", Integer, ForeignKey("systems.id"), nullable=False, index=True),
    Column("started_at", Text, nullable=False),
    Column("finished_at", Text),
    Column("status", Text, nullable=False),  # running | complete | interrupted | failed | abandoned
    Column("note", Text, nullable=False, default=""),
    Column("profile", Text, nullable=False),
    Column("profile_source", Text, nullable=False),
    Column("argv", Text, nullable=False),  # JSON list
    Column("system_facts", Text, nullable=False),  # JSON object
    Column("doctor", Text, nullable=False),  # JSON list of {name, status, value, advice}
    Column("rtgauge_version", Text, nullable=False),
    # JSON {pid, start_ticks, boot_id, machine_id, host} of the process running it (version 2)
    Column("owner", Text),
    # An imported run's origin (version 3): JSON {format, file, identity, ...} and the
    # identity alone, indexed, so importing the same run again is recognised
    Column("origin", Text),
    Column("origin_key", Text, index=True),
)

measurements = Table(
    "measurements",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("tool", Text, nullable=False),
    Column("test", Text, nullable=False),
    Column("condition", Text, nullable=False),
    Column("reference", Boolean, nullable=False),
    # 1..N: the round of a job measured in rounds, the segment of a long load's job
    # stored in parts; NULL for a job measured once (the name says the job alone)
    Column("round", Integer),
    Column("segment", Integer),
    Column("ok", Boolean, nullable=False),
    Column("interrupted", Boolean, nullable=False),
    Column("error", Text),
    Column("exit_status", Integer),
    Column("params", Text, nullable=False),  # JSON object
    Column("env", Text, nullable=False),  # JSON object
    Column("load", Text, nullable=False),  # JSON object: what the load delivered
    Column("command", Text, nullable=False),  # JSON list
    Column("started_at", Text),
    Column("duration_s", Float),
    Column("document", Text, nullable=False),  # the tool's JSON document, whole
    Column("stored_at", Text, nullable=False),
)

metrics = Table(
    "metrics",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("kind", Text, nullable=False),  # scalar | distribution | series | other
    Column("unit", Text),
    Column("value", Float),
    Column("count", BigInteger),
    Column("min", Float),
    Column("avg", Float),
    Column("stddev", Float),
    Column("p50", Float),
    Column("p90", Float),
    Column("p99", Float),
    Column("p999", Float),
    Column("p9999", Float),
    Column("max", Float),
    # Keys the columns do not hold (new fields, explicit nulls), so the metric
    # reads back exactly as the tool wrote it.
    Column("extra", Text),
    UniqueConstraint("measurement_id", "name", name="metrics_name"),
)

# Arrays attached to a metric: the log-linear histogram (its bins are also rows
# in histogram_bins, for SQL queries), the linear histogram, a series' values.
histograms = Table(
    "histograms",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("metric_id", Integer, ForeignKey("metrics.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("layout", Text, nullable=False),  # log-linear | linear | series
    Column("scheme", Text),
    Column("sub_buckets", Integer),
    Column("bucket_ns", BigInteger),
    Column("window_ns", BigInteger),
    Column("start_ns", BigInteger),
    Column("overflow", BigInteger),
    Column("data", Text, nullable=False),  # JSON array: bins, counts or series values
    Column("extra", Text),
)

histogram_bins = Table(
    "histogram_bins",
    metadata,
    Column("histogram_id", Integer, ForeignKey("histograms.id", ondelete="CASCADE"),
           primary_key=True, autoincrement=False),
    Column("seq", Integer, primary_key=True, autoincrement=False),  # position in the bins list
    Column("lo_ns", BigInteger, nullable=False),
    Column("hi_ns", BigInteger, nullable=False),
    Column("count", BigInteger, nullable=False),
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("pass", Boolean, nullable=False),
    Column("detail", Text, nullable=False),
)

Index("runs_started", runs.c.started_at)
