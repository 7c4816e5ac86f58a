"""Migration 0007: stored text values become JSON (valid JSON as itself, anything else as a JSON string),
`expires_at` appears with its cleanup index, and the downgrade gives the text back."""

from __future__ import annotations

import asyncio
import json

import asyncpg
from alembic import command

from assetbus.migrate import alembic_config, upgrade_async
from tests.integration.migrations.conftest import plain_dsn

TEXTS = ['{"batch": 41}', "41", '"quoted"', "2026-10-01", "not json {", "", "true", "[1, 2]", '"\\u0000"']
AS_JSON = [{"batch": 41}, 41, "quoted", "2026-10-01", "not json {", "", True, [1, 2], '"\\u0000"']


async def test_text_values_become_json_and_the_downgrade_restores_text(empty_db: str) -> None:
    await upgrade_async(empty_db, "0006")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        await conn.execute("INSERT INTO assets (name, uri) VALUES ('orders', 's3://b/o/')")
        for i, text in enumerate(TEXTS):
            await conn.execute("INSERT INTO task_state (dag_id, run_id, task_id, map_index, key, value) "
                               "VALUES ('d', 'r', 't', -1, $1, $2)", f"k{i}", text)
            await conn.execute("INSERT INTO asset_state (asset_id, key, value) "
                               "SELECT id, $1, $2 FROM assets", f"k{i}", text)
    finally:
        await conn.close()

    await upgrade_async(empty_db, "0007")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        await conn.set_type_codec("jsonb", encoder=str, decoder=json.loads, schema="pg_catalog")
        for table in ("task_state", "asset_state"):
            rows = await conn.fetch(f"SELECT key, value FROM {table} ORDER BY length(key), key")
            assert [row["value"] for row in rows] == AS_JSON, table
        columns = {r["column_name"]: r["data_type"] for r in await conn.fetch(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'task_state'")}
        assert columns["value"] == "jsonb" and columns["expires_at"] == "timestamp with time zone"
        index = await conn.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_task_state_expires_at'")
        assert index is not None and "expires_at IS NOT NULL" in index
    finally:
        await conn.close()

    await asyncio.to_thread(command.downgrade, alembic_config(empty_db), "0006")
    conn = await asyncpg.connect(plain_dsn(empty_db))
    try:
        rows = await conn.fetch("SELECT key, value FROM task_state ORDER BY key")
        assert [json.loads(row["value"]) for row in rows] == AS_JSON
    finally:
        await conn.close()
