"""Revoked credentials: `revoked_tokens`, the worker credentials (by `jti`) the Airflow minter refuses at once.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "revoked_tokens",
        sa.Column("jti", sa.Text, nullable=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("jti", name="pk_revoked_tokens"),
    )


def downgrade() -> None:
    op.drop_table("revoked_tokens")
