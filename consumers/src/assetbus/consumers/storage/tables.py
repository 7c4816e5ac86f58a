"""SQLAlchemy table definitions: the one description of the schema that Alembic migrates to."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

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
