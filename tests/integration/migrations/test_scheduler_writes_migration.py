"""Migration 0008: the scheduler's foreign keys go, `published` becomes the side table `unpublished_runs`
(unpublished runs stay unpublished), and the downgrade gives the columns and the foreign keys back."""

from __future__ import annotations

import asyncio

import asyncpg
from alembic import command

from assetbus.migrate import alembic_config, upgrade_async
from tests.integration.migrations.conftest import plain_dsn

FOREIGN_KEYS = {"fk_partition_queue_dag_id_consumer_dags", "fk_partition_queue_event_id_asset_events",
                "fk_consumer_runs_dag_id_consumer_dags"}


async def _foreign_keys(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid IN "
                            "('partition_queue'::regclass, 'consumer_runs'::regclass)")
    return {row["conname"] for row in rows}


async def test_unpublished_runs_stay_unpublished_both_ways_and_the_foreign_keys_come_back(empty_db: str) -> None:
    await upgrade_async(empty_db, "0007")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        await conn.execute("INSERT INTO consumer_dags (dag_id, fileloc, definition, fingerprint, coalesce) "
                           "VALUES ('daily', 'dags.py', '{}', 'f', true)")
        for run_id, published in (("sent", True), ("pending", False)):
            await conn.execute("INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, origin, "
                               "published) VALUES ($1, 'daily', $1, 1, '[]', 'scheduler', $2)", run_id, published)
        assert await _foreign_keys(conn) == FOREIGN_KEYS
    finally:
        await conn.close()

    await upgrade_async(empty_db, "0008")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        unpublished = await conn.fetch("SELECT r.run_id FROM unpublished_runs u JOIN consumer_runs r USING (id)")
        assert [row["run_id"] for row in unpublished] == ["pending"]
        columns = {r["column_name"] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'consumer_runs'")}
        assert not columns & {"published", "published_at"}
        assert await _foreign_keys(conn) == set()
        # a queue entry no longer needs its DAG and event rows to exist (the scheduler confirms both)
        await conn.execute("INSERT INTO partition_queue (dag_id, event_id, asset_name, target_key, slot, event) "
                           "VALUES ('other', 12345, 'orders', '', '*', '{}')")
        await conn.execute("DELETE FROM partition_queue")
    finally:
        await conn.close()

    await asyncio.to_thread(command.downgrade, alembic_config(empty_db), "0007")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        rows = await conn.fetch("SELECT run_id, published, published_at IS NOT NULL AS dated FROM consumer_runs "
                                "ORDER BY run_id")
        assert [tuple(row) for row in rows] == [("pending", False, False), ("sent", True, True)]
        assert await _foreign_keys(conn) == FOREIGN_KEYS
        index = await conn.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_consumer_runs_unpublished'")
        assert index is not None and "NOT published" in index
        assert await conn.fetchval("SELECT to_regclass('unpublished_runs')") is None
    finally:
        await conn.close()
