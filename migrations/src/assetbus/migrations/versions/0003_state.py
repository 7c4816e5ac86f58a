"""Task state and asset state (execution API), and task-asset registrations.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "task_state",
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("dag_id", "run_id", "task_id", "map_index", "key", name="pk_task_state"),
    )
    op.create_table(
        "asset_state",
        sa.Column("asset_id", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(["asset_id"], ["assets.id"], name="fk_asset_state_asset_id_assets",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("asset_id", "key", name="pk_asset_state"),
    )
    op.create_table(
        "task_assets",
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("asset_id", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("role IN ('inlet', 'outlet')", name="ck_task_assets_role"),
        sa.ForeignKeyConstraint(["asset_id"], ["assets.id"], name="fk_task_assets_asset_id_assets",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("dag_id", "task_id", "asset_id", "role", name="pk_task_assets"),
    )
    op.create_index("ix_task_assets_asset_id", "task_assets", ["asset_id"])


def downgrade() -> None:
    op.drop_index("ix_task_assets_asset_id", table_name="task_assets")
    op.drop_table("task_assets")
    op.drop_table("asset_state")
    op.drop_table("task_state")
