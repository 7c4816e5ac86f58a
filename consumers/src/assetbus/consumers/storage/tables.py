"""SQLAlchemy table definitions: the one description of the schema that Alembic migrates to.

The scheduler's tables store partition keys NOT NULL with `''` meaning "unpartitioned" (real keys are never
empty), so that unique keys and index lookups use plain equality; the query modules translate `''` to None.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB, UUID

metadata = MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})

assets = Table(
    "assets",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("uri", Text, nullable=False, unique=True),
    Column("active", Boolean, nullable=False, server_default="true"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

asset_events = Table(
    "asset_events",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("asset_id", BigInteger, ForeignKey("assets.id"), nullable=False),
    Column("dedupe_scope", Text, nullable=False),
    Column("dedupe_key", Text, nullable=False),
    Column("command_id", UUID(as_uuid=True), nullable=False),
    Column("extra", JSONB, nullable=False),
    Column("partition_key", Text),
    Column("partition_date", DateTime(timezone=True)),
    Column("source_kind", Text, nullable=False),
    Column("dag_id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("task_id", Text),
    Column("map_index", Integer),
    Column("try_number", Integer),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("asset_id", "dedupe_scope", "dedupe_key"),
    Index(None, "asset_id", "id"),
    Index(None, "asset_id", "partition_key", "id"),  # latest per partition, events of one partition (0005)
    Index(None, "created_at"),  # events since a time (0005)
)

UNPARTITIONED = ""
"""How an unpartitioned target is stored in the key columns below."""

consumer_dags = Table(
    "consumer_dags",
    metadata,
    Column("dag_id", Text, primary_key=True),
    Column("fileloc", Text, nullable=False),
    Column("definition", JSONB, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("coalesce", Boolean, nullable=False),
    Column("active", Boolean, nullable=False, server_default="true"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

partition_queue = Table(
    "partition_queue",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("dag_id", Text, nullable=False),  # no foreign keys (0008): the scheduler confirms both ids
    Column("event_id", BigInteger, nullable=False),
    Column("asset_name", Text, nullable=False),
    Column("target_key", Text, nullable=False),
    Column("target_date", DateTime(timezone=True)),
    Column("slot", Text, nullable=False),
    Column("event", JSONB, nullable=False),  # the TriggeringEvent while pending; JSON null once consumed
    Column("run_id", Text),
    Column("queued_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("dag_id", "event_id"),
    Index("ix_partition_queue_pending", "dag_id", "target_key", postgresql_where=text("run_id IS NULL")),
    Index(None, "event_id"),  # an event's runs and waits (0005)
)

consumer_runs = Table(
    "consumer_runs",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("run_id", Text, nullable=False, unique=True),
    Column("dag_id", Text, nullable=False),  # no foreign key (0008)
    Column("partition_key", Text, nullable=False),
    Column("partition_date", DateTime(timezone=True)),
    Column("generation", Integer, nullable=False),
    Column("events", JSONB, nullable=False),
    Column("origin", Text, nullable=False),
    Column("status", Text, nullable=False, server_default="queued"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("consumer", Text),
    Column("detail", Text),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("external_run_id", Text),
    Column("external_state", Text),
    Column("event_id", BigInteger),  # a run ready at its one event: that event, which has no queue row (0009)
    Column("lease_until", DateTime(timezone=True)),  # when the holder's claim of a running run expires (0013)
    UniqueConstraint("dag_id", "partition_key", "generation"),
    Index("uq_consumer_runs_event_id", "event_id", "dag_id", unique=True,
          postgresql_where=text("event_id IS NOT NULL")),
    Index(None, "dag_id", "id"),
    Index("ix_consumer_runs_external_open", "dag_id", "id",
          postgresql_where=text("external_run_id IS NOT NULL AND status = 'running'")),
)

unpublished_batches = Table(
    "unpublished_batches",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("run_ids", ARRAY(BigInteger), nullable=False),
)
"""The ids of runs whose readiness signal the broker has not acknowledged yet, one row per write (0010; not
one per run, so that a per-event DAG writes one row per event, the run): deleted once the broker has all
their signals, read to heal a crash before that."""

mapping_skips = Table(
    "mapping_skips",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("dag_id", Text, ForeignKey("consumer_dags.dag_id"), nullable=False),
    Column("event_id", BigInteger, ForeignKey("asset_events.id"), nullable=False),
    Column("asset_name", Text, nullable=False),
    Column("partition_key", Text),
    Column("reason", Text, nullable=False),
    Column("detail", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("dag_id", "event_id"),
)
"""Events a DAG's partition mapping could not map, with a machine-readable reason."""

ROLES = ("inlet", "outlet")
"""How a task is registered with an asset; either role opens the asset's state to it."""

task_state = Table(
    "task_state",
    metadata,
    Column("dag_id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("map_index", Integer, nullable=False),
    Column("key", Text, nullable=False),
    Column("value", JSON(none_as_null=True), nullable=False),  # json: kept as written (0012)
    Column("version", Integer, nullable=False, server_default="1"),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("dag_id", "run_id", "task_id", "map_index", "key"),
    Index(None, "expires_at", postgresql_where=text("expires_at IS NOT NULL")),
)
"""One JSON value per (task instance, key). The primary key's prefix serves run purges and clears;
`expires_at` (null: never) is when the retention cleanup may delete the row."""

asset_state = Table(
    "asset_state",
    metadata,
    Column("asset_id", BigInteger, ForeignKey("assets.id", ondelete="CASCADE"), nullable=False),
    Column("key", Text, nullable=False),
    Column("value", JSON(none_as_null=True), nullable=False),  # json: kept as written (0012)
    Column("version", Integer, nullable=False, server_default="1"),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("asset_id", "key"),
)
"""One value per (asset, key): cross-run watermarks."""

task_assets = Table(
    "task_assets",
    metadata,
    Column("dag_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("asset_id", BigInteger, ForeignKey("assets.id", ondelete="CASCADE"), nullable=False),
    Column("role", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("dag_id", "task_id", "asset_id", "role"),
    CheckConstraint("role IN ('inlet', 'outlet')", name="role"),
    Index(None, "asset_id"),
)
"""Which tasks read (inlet) or write (outlet) which asset; the gate of asset state."""
