"""Tables of task state, asset state and task-asset registrations (migration 0003).

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
)

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
    Column("value", Text, nullable=False),
    Column("version", Integer, nullable=False, server_default="1"),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("dag_id", "run_id", "task_id", "map_index", "key"),
)
"""One value per (task instance, key). The primary key's prefix serves run purges and clears."""

asset_state = Table(
    "asset_state",
    metadata,
    Column("asset_id", BigInteger, ForeignKey("assets.id", ondelete="CASCADE"), nullable=False),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
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
