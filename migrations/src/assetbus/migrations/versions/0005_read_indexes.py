"""Indexes of the operators' read side (the `/ui` page and the CLI listings), so they stay fast at 100,000+ events.

- `asset_events (asset_id, partition_key, id)`: the newest event per partition (a skip scan) and the
  events of one partition, newest first;
- `asset_events (created_at)`: events since a time;
- `partition_queue (event_id)`: the runs an event triggered and where it still waits.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"  # chained after 0004 (external runs) once both landed
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_asset_events_asset_id_partition_key_id", "asset_events", ["asset_id", "partition_key", "id"])
    op.create_index("ix_asset_events_created_at", "asset_events", ["created_at"])
    op.create_index("ix_partition_queue_event_id", "partition_queue", ["event_id"])


def downgrade() -> None:
    op.drop_index("ix_partition_queue_event_id", table_name="partition_queue")
    op.drop_index("ix_asset_events_created_at", table_name="asset_events")
    op.drop_index("ix_asset_events_asset_id_partition_key_id", table_name="asset_events")
