"""Consumer DAGs, queued partitions and consumer runs (scheduler).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _created_at(name: str = "created_at") -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "consumer_dags",
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("fileloc", sa.Text(), nullable=False),
        sa.Column("definition", postgresql.JSONB(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("coalesce", sa.Boolean(), nullable=False),
        sa.Column("active", sa.Boolean(), server_default="true", nullable=False),
        _created_at(),
        _created_at("updated_at"),
        sa.PrimaryKeyConstraint("dag_id", name="pk_consumer_dags"),
    )
    op.create_table(
        "partition_queue",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("asset_name", sa.Text(), nullable=False),
        sa.Column("target_key", sa.Text(), nullable=False),
        sa.Column("target_date", sa.DateTime(timezone=True)),
        sa.Column("slot", sa.Text(), nullable=False),
        sa.Column("event", postgresql.JSONB(), nullable=False),
        sa.Column("run_id", sa.Text()),
        _created_at("queued_at"),
        sa.PrimaryKeyConstraint("id", name="pk_partition_queue"),
        sa.ForeignKeyConstraint(["dag_id"], ["consumer_dags.dag_id"], name="fk_partition_queue_dag_id_consumer_dags"),
        sa.ForeignKeyConstraint(["event_id"], ["asset_events.id"], name="fk_partition_queue_event_id_asset_events"),
        sa.UniqueConstraint("dag_id", "event_id", name="uq_partition_queue_dag_id_event_id"),
    )
    op.create_index("ix_partition_queue_pending", "partition_queue", ["dag_id", "target_key"],
                    postgresql_where=sa.text("run_id IS NULL"))
    op.create_table(
        "consumer_runs",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column("partition_date", sa.DateTime(timezone=True)),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("events", postgresql.JSONB(), nullable=False),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), server_default="queued", nullable=False),
        sa.Column("published", sa.Boolean(), server_default="false", nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True)),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("consumer", sa.Text()),
        sa.Column("detail", sa.Text()),
        _created_at(),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("id", name="pk_consumer_runs"),
        sa.ForeignKeyConstraint(["dag_id"], ["consumer_dags.dag_id"], name="fk_consumer_runs_dag_id_consumer_dags"),
        sa.UniqueConstraint("run_id", name="uq_consumer_runs_run_id"),
        sa.UniqueConstraint("dag_id", "partition_key", "generation",
                            name="uq_consumer_runs_dag_id_partition_key_generation"),
    )
    op.create_index("ix_consumer_runs_unpublished", "consumer_runs", ["id"], postgresql_where=sa.text("NOT published"))
    op.create_index("ix_consumer_runs_dag_id_id", "consumer_runs", ["dag_id", "id"])
    op.create_table(
        "mapping_skips",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("dag_id", sa.Text(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("asset_name", sa.Text(), nullable=False),
        sa.Column("partition_key", sa.Text()),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name="pk_mapping_skips"),
        sa.ForeignKeyConstraint(["dag_id"], ["consumer_dags.dag_id"], name="fk_mapping_skips_dag_id_consumer_dags"),
        sa.ForeignKeyConstraint(["event_id"], ["asset_events.id"], name="fk_mapping_skips_event_id_asset_events"),
        sa.UniqueConstraint("dag_id", "event_id", name="uq_mapping_skips_dag_id_event_id"),
    )


def downgrade() -> None:
    op.drop_table("mapping_skips")
    op.drop_index("ix_consumer_runs_dag_id_id", table_name="consumer_runs")
    op.drop_index("ix_consumer_runs_unpublished", table_name="consumer_runs")
    op.drop_table("consumer_runs")
    op.drop_index("ix_partition_queue_pending", table_name="partition_queue")
    op.drop_table("partition_queue")
    op.drop_table("consumer_dags")
