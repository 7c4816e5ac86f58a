"""The routes' database access: `transaction()` is atomic, `statement()` commits its one statement by itself."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api.database import Database
from assetbus.consumers.storage.state import TaskKey, get_task_state, set_task_state

TI = TaskKey("d", "r", "t", -1)


async def test_a_statement_is_committed_without_a_transaction_block(engine: AsyncEngine) -> None:
    db = Database(engine)
    async with db.statement() as conn:
        written = await set_task_state(conn, TI, "k", "v1")
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None and not driver.is_in_transaction()  # autocommit: no BEGIN was sent
    async with engine.connect() as other:
        stored = await get_task_state(other, TI, "k")
    assert stored is not None and stored.version == written.version == 1


async def test_a_failing_transaction_leaves_nothing(engine: AsyncEngine) -> None:
    db = Database(engine)
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await set_task_state(conn, TI, "k", "v1")
            raise RuntimeError("after the write")
    async with db.statement() as conn:
        assert await get_task_state(conn, TI, "k") is None
        assert (await conn.execute(text("select 1"))).scalar() == 1  # the pooled connection is usable after both
