"""Consumer runs started in an orchestrator (Airflow): the orchestrator's run id and its last known state.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("consumer_runs", sa.Column("external_run_id", sa.Text(), nullable=True))
    op.add_column("consumer_runs", sa.Column("external_state", sa.Text(), nullable=True))
    op.create_index("ix_consumer_runs_external_open", "consumer_runs", ["dag_id", "id"],
                    postgresql_where=sa.text("external_run_id IS NOT NULL AND status = 'running'"))


def downgrade() -> None:
    op.drop_index("ix_consumer_runs_external_open", table_name="consumer_runs")
    op.drop_column("consumer_runs", "external_state")
    op.drop_column("consumer_runs", "external_run_id")
