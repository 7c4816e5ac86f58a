"""Tables of task state, asset state and task-asset registrations (migrations 0003 and 0007).

They live on the same `metadata` as the baseline tables, so one naming convention applies.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSON

from assetbus.consumers.storage.tables import metadata

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
