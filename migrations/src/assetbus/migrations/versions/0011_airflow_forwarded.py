"""The Airflow forwarder's ledger: `airflow_forwarded`, one row per stored event posted to Airflow.

Written as an intent before the POST and confirmed with Airflow's event id after it, so that a
forwarder killed between the two resolves the intent by searching Airflow instead of posting twice.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "airflow_forwarded",
        sa.Column("event_id", sa.BigInteger, nullable=False),
        sa.Column("airflow_asset_id", sa.BigInteger, nullable=False),
        sa.Column("state", sa.Text, nullable=False, server_default="intent"),
        sa.Column("airflow_event_id", sa.BigInteger),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("detail", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.ForeignKeyConstraint(["event_id"], ["asset_events.id"], name="fk_airflow_forwarded_event_id_asset_events"),
        sa.PrimaryKeyConstraint("event_id", name="pk_airflow_forwarded"),
    )


def downgrade() -> None:
    op.drop_table("airflow_forwarded")
