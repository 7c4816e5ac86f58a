"""The Airflow forwarder's ledger gets a lease: `lease_owner` and `lease_until` on `airflow_forwarded`.

The forwarder no longer holds the row's lock (and a database connection) while it calls Airflow: it takes a
lease on the intent in a short transaction, calls Airflow outside any transaction, and records the result in
another. Another forwarder meets the lease and waits until the entry is finished or the lease has run out.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("airflow_forwarded", sa.Column("lease_owner", sa.Text))
    op.add_column("airflow_forwarded", sa.Column("lease_until", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("airflow_forwarded", "lease_until")
    op.drop_column("airflow_forwarded", "lease_owner")
