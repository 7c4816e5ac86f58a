"""A run that one event made ready holds that event: no queue row for it.

A per-event consumer DAG wrote two rows per event: a `partition_queue` entry, consumed at once, and
the run. Now such a run records its event in `consumer_runs.event_id` (unique per DAG and event, as
a queue entry is, so redeliveries and replay find it), and the entry is not stored.

The upgrade moves existing data: every queue entry that is the only entry of its run becomes that
run's `event_id`, and the entry is deleted. The downgrade puts the entries back from the runs
(asset name from the event; the slot, which nothing reads once an entry is consumed, as the event's
partition key) and drops the column.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("consumer_runs", sa.Column("event_id", sa.BigInteger))
    op.execute("""
        WITH single AS (
          SELECT min(q.id) AS id, q.run_id FROM partition_queue q WHERE q.run_id IS NOT NULL
          GROUP BY q.run_id HAVING count(*) = 1
        ), moved AS (
          UPDATE consumer_runs r SET event_id = q.event_id
          FROM single JOIN partition_queue q ON q.id = single.id WHERE r.run_id = single.run_id
          RETURNING q.id
        )
        DELETE FROM partition_queue WHERE id IN (SELECT id FROM moved)""")
    op.create_index("uq_consumer_runs_event_id", "consumer_runs", ["event_id", "dag_id"], unique=True,
                    postgresql_where=sa.text("event_id IS NOT NULL"))


def downgrade() -> None:
    op.execute("""
        INSERT INTO partition_queue (dag_id, event_id, asset_name, target_key, target_date, slot, event, run_id,
                                     queued_at)
        SELECT r.dag_id, r.event_id, a.name, r.partition_key, r.partition_date,
               coalesce(e.partition_key, ''), 'null', r.run_id, r.created_at
        FROM consumer_runs r JOIN asset_events e ON e.id = r.event_id JOIN assets a ON a.id = e.asset_id
        WHERE r.event_id IS NOT NULL""")
    op.drop_index("uq_consumer_runs_event_id", table_name="consumer_runs")
    op.drop_column("consumer_runs", "event_id")
