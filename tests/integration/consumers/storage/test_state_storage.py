"""Task state and asset state in PostgreSQL: versions, compare-and-set, clears and run purges."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.state import (
    AssetNotRegistered,
    AssetRef,
    Precondition,
    StateConflict,
    TaskKey,
    clear_asset,
    get_asset_state,
    get_task_state,
    list_task_state,
    purge_run_state,
    set_asset_value,
    set_task_value,
)
from assetbus.consumers.storage.task_assets import attach_task_asset, list_task_assets

TI = TaskKey("ingest", "run-1", "load", -1)


async def _driver(conn: AsyncConnection) -> asyncpg.Connection:
    """The transaction's asyncpg connection, as `assetbus state` runs the statements on it."""
    driver = (await conn.get_raw_connection()).driver_connection
    assert driver is not None
    return driver


async def test_purging_a_run_removes_the_state_of_its_tasks_and_nothing_else(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        driver = await _driver(conn)
        for ti in (TI, TaskKey("ingest", "run-1", "report", 3), TaskKey("ingest", "run-2", "load", -1),
                   TaskKey("other", "run-1", "load", -1)):
            await set_task_value(driver, ti, "k", '"v"', Precondition(), None)
        assert await purge_run_state(conn, "ingest", "run-1") == 2
        assert await list_task_state(conn, TI) == []
        assert await get_task_state(conn, TaskKey("ingest", "run-2", "load", -1), "k") is not None
        assert await get_task_state(conn, TaskKey("other", "run-1", "load", -1), "k") is not None


async def test_a_conflict_reports_what_is_stored_and_writes_nothing(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        driver = await _driver(conn)
        await set_task_value(driver, TI, "k", '"one"', Precondition(), None)
        await set_task_value(driver, TI, "k", '"two"', Precondition(), None)
        with pytest.raises(StateConflict) as raised:
            await set_task_value(driver, TI, "k", '"three"', Precondition(versions=frozenset({1})), None)
        assert raised.value.current_version == 2
        entry = await get_task_state(conn, TI, "k")
        assert entry is not None and (entry.value, entry.version) == ("two", 2)


async def test_asset_state_and_registrations_follow_the_asset(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        orders = await register_asset(conn, "orders", "s3://bucket/orders/")
        assert await attach_task_asset(conn, "ingest", "load", "orders", "outlet") is True
        assert await attach_task_asset(conn, "ingest", "load", "orders", "outlet") is False
        assert await attach_task_asset(conn, "ingest", "load", "orders", "inlet") is True
        assert [(r.task_id, r.role) for r in await list_task_assets(conn, "ingest")] == [("load", "inlet"),
                                                                                         ("load", "outlet")]
        driver, operator = await _driver(conn), AssetRef("operator", "orders")
        await set_asset_value(driver, operator, "watermark", "41", Precondition())
        await set_asset_value(driver, operator, "other", '"x"', Precondition())
        assert await clear_asset(driver, operator) == 2
        assert await get_asset_state(conn, orders.id, "watermark") is None
        with pytest.raises(AssetNotRegistered):  # an operator reaches any registered asset, only those
            await clear_asset(driver, AssetRef("operator", "nope"))


async def test_attaching_needs_a_registered_asset_and_a_known_role(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        with pytest.raises(ValueError, match="not registered"):
            await attach_task_asset(conn, "ingest", "load", "nope", "outlet")
        await register_asset(conn, "orders", "s3://bucket/orders/")
        with pytest.raises(ValueError, match="role"):
            await attach_task_asset(conn, "ingest", "load", "orders", "writer")
