"""The redrive log of dead letters (`assetbus dlq redrive`): at most one redrive per dead letter.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dlq_redrives",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("dlq_topic", sa.Text(), nullable=False),
        sa.Column("dlq_partition", sa.Integer(), nullable=False),
        sa.Column("dlq_offset", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("target_topic", sa.Text(), nullable=False),
        sa.Column("target_partition", sa.Integer(), nullable=True),
        sa.Column("target_offset", sa.BigInteger(), nullable=True),
        sa.Column("value_sha256", sa.Text(), nullable=False),
        sa.Column("value_replaced", sa.Text(), nullable=False),
        sa.Column("operator", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), server_default="", nullable=False),
        sa.Column("redriven_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_dlq_redrives"),
        sa.UniqueConstraint("dlq_topic", "dlq_partition", "dlq_offset",
                            name="uq_dlq_redrives_dlq_topic_dlq_partition_dlq_offset"),
    )


def downgrade() -> None:
    op.drop_table("dlq_redrives")
