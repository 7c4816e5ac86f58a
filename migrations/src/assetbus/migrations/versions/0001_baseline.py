"""Baseline: registered assets and their events with a unique dedupe scope.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "assets",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("uri", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), server_default="true", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_assets"),
        sa.UniqueConstraint("name", name="uq_assets_name"),
        sa.UniqueConstraint("uri", name="uq_assets_uri"),
    )
    op.create_table(
        "asset_events",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("asset_id", sa.BigInteger(), nullable=False),
        sa.Column("dedupe_scope", sa.Text(), nullable=False),
        sa.Column("dedupe_key", sa.Text(), nullable=False),
        sa.Column("command_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("extra", postgresql.JSONB(), nullable=False),
        sa.Column("partition_key", sa.Text()),
        sa.Column("partition_date", sa.DateTime(timezone=True)),
        sa.Column("source_kind", sa.Text(), nullable=False),
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text()),
        sa.Column("map_index", sa.Integer()),
        sa.Column("try_number", sa.Integer()),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(["asset_id"], ["assets.id"], name="fk_asset_events_asset_id_assets"),
        sa.PrimaryKeyConstraint("id", name="pk_asset_events"),
        sa.UniqueConstraint("asset_id", "dedupe_scope", "dedupe_key",
                            name="uq_asset_events_asset_id_dedupe_scope_dedupe_key"),
    )
    op.create_index("ix_asset_events_asset_id_id", "asset_events", ["asset_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_asset_events_asset_id_id", table_name="asset_events")
    op.drop_table("asset_events")
    op.drop_table("assets")
