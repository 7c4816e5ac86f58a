"""Task and asset state values are kept as written: `json` instead of `jsonb`.

jsonb stores a parsed form and gives objects back with their keys sorted by length and bytes, so
`{"zz": 1, "a": 2}` came back as `{"a": 2, "zz": 1}`; Airflow's own state store keeps the text it
was given, and so does the `json` type. Nothing queries inside the values, so nothing is lost.
Values already stored keep the order jsonb gave them.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TABLES = ("task_state", "asset_state")


def upgrade() -> None:
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN value TYPE json USING value::text::json")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN value TYPE jsonb USING value::jsonb")
