"""The routes' database access: `transaction()` is atomic, `statement()` commits its one statement by itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api.database import Database
from assetbus.consumers.storage.raw_pool import create_raw_pool
from assetbus.consumers.storage.state import TaskKey, get_task_state

TI = TaskKey("d", "r", "t", -1)
_WRITE = text("INSERT INTO task_state (dag_id, run_id, task_id, map_index, key, value) "
              "VALUES ('d', 'r', 't', -1, 'k', '\"v1\"') RETURNING version")


@pytest.fixture
async def db(engine: AsyncEngine, db_url: str) -> AsyncIterator[Database]:
    pool = await create_raw_pool(db_url, size=1)
    try:
        yield Database(engine, pool)
    finally:
        await pool.close()


async def test_a_statement_is_committed_without_a_transaction_block(engine: AsyncEngine, db: Database) -> None:
    async with db.statement() as conn:
        written = (await conn.execute(_WRITE)).scalar_one()
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None and not driver.is_in_transaction()  # autocommit: no BEGIN was sent
    async with engine.connect() as other:
        stored = await get_task_state(other, TI, "k")
    assert stored is not None and stored.version == written == 1


async def test_a_failing_transaction_leaves_nothing(db: Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.execute(_WRITE)
            raise RuntimeError("after the write")
    async with db.statement() as conn:
        assert await get_task_state(conn, TI, "k") is None
        assert (await conn.execute(text("select 1"))).scalar() == 1  # the pooled connection is usable after both
