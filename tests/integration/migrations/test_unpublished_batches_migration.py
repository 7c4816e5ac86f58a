"""Migration 0010: the runs left unpublished stay unpublished, in one `unpublished_batches` row, and the
downgrade gives each its `unpublished_runs` row back."""

from __future__ import annotations

import asyncio

import asyncpg
from alembic import command

from assetbus.migrate import alembic_config, upgrade_async
from tests.integration.migrations.conftest import plain_dsn


async def test_unpublished_runs_stay_unpublished_both_ways(empty_db: str) -> None:
    await upgrade_async(empty_db, "0009")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        for key in ("sent", "pending-1", "pending-2"):
            await conn.execute("INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, origin) "
                               "VALUES ($1, 'daily', $1, 1, '[]', 'scheduler')", key)
        await conn.execute("INSERT INTO unpublished_runs (id) "
                           "SELECT id FROM consumer_runs WHERE run_id LIKE 'pending%'")
    finally:
        await conn.close()

    await upgrade_async(empty_db, "0010")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        rows = await conn.fetch("SELECT run_ids FROM unpublished_batches")
        assert len(rows) == 1
        pending = await conn.fetch("SELECT run_id FROM consumer_runs WHERE id = ANY($1::bigint[]) ORDER BY run_id",
                                   rows[0]["run_ids"])
        assert [row["run_id"] for row in pending] == ["pending-1", "pending-2"]
        assert await conn.fetchval("SELECT to_regclass('unpublished_runs')") is None
    finally:
        await conn.close()

    await asyncio.to_thread(command.downgrade, alembic_config(empty_db), "0009")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        back = await conn.fetch("SELECT r.run_id FROM unpublished_runs u JOIN consumer_runs r USING (id) ORDER BY 1")
        assert [row["run_id"] for row in back] == ["pending-1", "pending-2"]
        assert await conn.fetchval("SELECT to_regclass('unpublished_batches')") is None
    finally:
        await conn.close()
