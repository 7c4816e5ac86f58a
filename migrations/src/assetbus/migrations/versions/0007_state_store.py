"""The state store as Airflow 3.3 ships it: JSON values (JSONB) and an optional expiry of task state.

A stored text value that is valid JSON becomes that JSON document; any other text becomes a JSON
string holding it, so no value is lost. `expires_at` (null: never) gets a partial index for the
retention cleanup. The downgrade turns every value back into its JSON text.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TO_JSON = """
CREATE FUNCTION pg_temp.assetbus_text_to_jsonb(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN value::jsonb;
EXCEPTION WHEN others THEN
    RETURN to_jsonb(value);
END
$$
"""


def upgrade() -> None:
    op.execute(_TO_JSON)
    for table in ("task_state", "asset_state"):
        op.execute(f"ALTER TABLE {table} ALTER COLUMN value TYPE jsonb "
                   "USING pg_temp.assetbus_text_to_jsonb(value)")
    op.add_column("task_state", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_task_state_expires_at", "task_state", ["expires_at"],
                    postgresql_where=sa.text("expires_at IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("ix_task_state_expires_at", table_name="task_state")
    op.drop_column("task_state", "expires_at")
    for table in ("task_state", "asset_state"):
        op.execute(f"ALTER TABLE {table} ALTER COLUMN value TYPE text USING value::text")
