"""Migration 0009: a queue entry that is the only entry of its run moves into the run (`event_id`) and
is deleted; entries of runs with several, and pending ones, stay. The downgrade puts them back."""

from __future__ import annotations

import asyncio

import asyncpg
from alembic import command

from assetbus.migrate import alembic_config, upgrade_async
from tests.integration.migrations.conftest import plain_dsn

_SEED = """
INSERT INTO assets (name, uri) VALUES ('orders', 's3://orders/');
INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key, source_kind,
                          dag_id, run_id)
SELECT 1, 'scope', 'k' || n, gen_random_uuid(), '{}', 'p' || n, 'dag', 'ingest', 'r' FROM generate_series(1, 4) n;
INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, origin)
VALUES ('single', 'per_event', 'p1', 1, '[{"event_id": 1}]', 'scheduler'),
       ('rollup', 'daily', 'day', 1, '[{"event_id": 2}, {"event_id": 3}]', 'scheduler');
INSERT INTO partition_queue (dag_id, event_id, asset_name, target_key, slot, event, run_id)
VALUES ('per_event', 1, 'orders', 'p1', 'p1', 'null', 'single'),
       ('daily', 2, 'orders', 'day', 'h2', 'null', 'rollup'),
       ('daily', 3, 'orders', 'day', 'h3', 'null', 'rollup'),
       ('daily', 4, 'orders', 'day2', 'h4', '{"event_id": 4}', NULL);
"""

_QUEUE = "SELECT dag_id, event_id, target_key, run_id FROM partition_queue ORDER BY event_id"


async def test_single_entries_move_into_their_runs_and_back(empty_db: str) -> None:
    await upgrade_async(empty_db, "0008")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        await conn.execute(_SEED)
        before = [tuple(row) for row in await conn.fetch(_QUEUE)]
    finally:
        await conn.close()

    await upgrade_async(empty_db, "0009")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        assert [tuple(row) for row in await conn.fetch(_QUEUE)] == [before[1], before[2], before[3]]
        runs = await conn.fetch("SELECT run_id, event_id FROM consumer_runs ORDER BY run_id")
        assert [tuple(row) for row in runs] == [("rollup", None), ("single", 1)]
        try:  # one run per (dag, event), as one queue entry was
            await conn.execute("INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, origin, "
                               "event_id) VALUES ('again', 'per_event', 'p1', 2, '[]', 'scheduler', 1)")
        except asyncpg.UniqueViolationError:
            pass
        else:
            raise AssertionError("a second run for the same (dag, event) was stored")
    finally:
        await conn.close()

    await asyncio.to_thread(command.downgrade, alembic_config(empty_db), "0008")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        assert [tuple(row) for row in await conn.fetch(_QUEUE)] == before
        restored = await conn.fetchrow("SELECT asset_name, slot, event::text FROM partition_queue WHERE event_id = 1")
        assert tuple(restored) == ("orders", "p1", "null")
        columns = {r["column_name"] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'consumer_runs'")}
        assert "event_id" not in columns
    finally:
        await conn.close()
