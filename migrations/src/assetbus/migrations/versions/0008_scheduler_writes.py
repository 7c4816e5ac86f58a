"""The scheduler's writes get cheaper: no per-row foreign-key checks, and no `published` flag to update.

- The foreign keys of `partition_queue` (`dag_id`, `event_id`) and of `consumer_runs` (`dag_id`)
  are dropped: a trigger per inserted row cost a third of each insert, and the scheduler confirms
  the event ids (and loads the DAGs) in the same transaction that writes those rows.
- `consumer_runs.published` (in the predicate of a partial index, so marking a run published
  updated all of the table's indexes) and `published_at` are replaced by a side table,
  `unpublished_runs (id)`: a run's id is inserted with the run and deleted once the broker has
  its signal. A run is published when its id is not there.

The downgrade brings the columns back (`published_at` is then the run's `created_at`, the time
it was published being no longer known) and the foreign keys (rows that would violate them are
reported by PostgreSQL, as they could only come from writes outside the scheduler).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

FOREIGN_KEYS = (
    ("fk_partition_queue_dag_id_consumer_dags", "partition_queue", "consumer_dags", "dag_id", "dag_id"),
    ("fk_partition_queue_event_id_asset_events", "partition_queue", "asset_events", "event_id", "id"),
    ("fk_consumer_runs_dag_id_consumer_dags", "consumer_runs", "consumer_dags", "dag_id", "dag_id"),
)


def upgrade() -> None:
    for name, table, *_ in FOREIGN_KEYS:
        op.drop_constraint(name, table, type_="foreignkey")
    op.create_table("unpublished_runs", sa.Column("id", sa.BigInteger, autoincrement=False, nullable=False),
                    sa.PrimaryKeyConstraint("id", name="pk_unpublished_runs"))
    op.execute("INSERT INTO unpublished_runs (id) SELECT id FROM consumer_runs WHERE NOT published")
    op.drop_index("ix_consumer_runs_unpublished", table_name="consumer_runs")
    op.drop_column("consumer_runs", "published_at")
    op.drop_column("consumer_runs", "published")


def downgrade() -> None:
    op.add_column("consumer_runs", sa.Column("published", sa.Boolean, nullable=False, server_default="true"))
    op.add_column("consumer_runs", sa.Column("published_at", sa.DateTime(timezone=True)))
    op.execute("UPDATE consumer_runs r SET published = NOT EXISTS (SELECT 1 FROM unpublished_runs u WHERE u.id = r.id)")
    op.execute("UPDATE consumer_runs SET published_at = created_at WHERE published")
    op.alter_column("consumer_runs", "published", server_default="false")
    op.create_index("ix_consumer_runs_unpublished", "consumer_runs", ["id"], postgresql_where=sa.text("NOT published"))
    op.drop_table("unpublished_runs")
    for name, table, referred, column, referred_column in FOREIGN_KEYS:
        op.create_foreign_key(name, table, referred, [column], [referred_column])
