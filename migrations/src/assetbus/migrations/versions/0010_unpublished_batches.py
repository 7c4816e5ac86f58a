"""Unpublished runs are recorded per batch: `unpublished_batches (id, run_ids)` replaces `unpublished_runs (id)`.

0008 inserted one `unpublished_runs` row per run and deleted it once the broker had the signal: a
second row written (and deleted) per event of a per-event DAG. Now the scheduler's write inserts
one row holding the ids of all the runs it created, deleted when the broker has all their signals.

The upgrade moves the ids still unpublished into one row; the downgrade gives each its own row back.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("unpublished_batches",
                    sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
                    sa.Column("run_ids", postgresql.ARRAY(sa.BigInteger), nullable=False),
                    sa.PrimaryKeyConstraint("id", name="pk_unpublished_batches"))
    op.execute("INSERT INTO unpublished_batches (run_ids) "
               "SELECT array_agg(id ORDER BY id) FROM unpublished_runs HAVING count(*) > 0")
    op.drop_table("unpublished_runs")


def downgrade() -> None:
    op.create_table("unpublished_runs", sa.Column("id", sa.BigInteger, autoincrement=False, nullable=False),
                    sa.PrimaryKeyConstraint("id", name="pk_unpublished_runs"))
    op.execute("INSERT INTO unpublished_runs (id) SELECT DISTINCT unnest(run_ids) FROM unpublished_batches")
    op.drop_table("unpublished_batches")
