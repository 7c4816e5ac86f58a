"""A run claim is a lease: `consumer_runs.lease_until`, when the holder's claim expires.

A subscriber's claim sets the run `running` with a fence (`attempts`, bumped per successful claim)
and a lease that its holder renews while the handler runs. A second claim of a running run is
refused until the lease has expired; an outcome reported with a stale fence is refused. Runs that
are `running` already (claimed before this version) have no lease: the next claim takes them, as
before.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("consumer_runs", sa.Column("lease_until", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("consumer_runs", "lease_until")
