"""The SQLAlchemy tables (what the code reads and writes) equal the schema the migrations build."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

import assetbus.consumers.storage.forwarded
import assetbus.consumers.storage.redrives
import assetbus.consumers.storage.revocations  # noqa: F401  (registers their tables on `metadata`)
from assetbus.consumers.storage.tables import metadata
from assetbus.migrate import upgrade_async


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True, "compare_server_default": True})
    return [diff for diff in compare_metadata(context, metadata)
            if not (isinstance(diff, tuple) and diff[0] == "remove_table" and diff[1].name == "alembic_version")]


async def test_the_migrated_schema_equals_the_tables_the_code_uses(empty_db: str) -> None:
    await upgrade_async(empty_db)
    engine = create_async_engine(empty_db)
    try:
        async with engine.connect() as conn:
            differences = await conn.run_sync(_differences)
    finally:
        await engine.dispose()
    assert differences == [], "the tables and the migrations disagree: write a migration (or fix the table)"
