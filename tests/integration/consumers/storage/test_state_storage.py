"""Task state and asset state in PostgreSQL: versions, compare-and-set, clears and run purges."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.state import (
    Precondition,
    StateConflict,
    TaskKey,
    clear_asset_state,
    get_asset_state,
    get_task_state,
    list_task_state,
    purge_run_state,
    set_asset_state,
    set_task_state,
)
from assetbus.consumers.storage.task_assets import attach_task_asset, list_task_assets

TI = TaskKey("ingest", "run-1", "load", -1)


async def test_purging_a_run_removes_the_state_of_its_tasks_and_nothing_else(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        for ti in (TI, TaskKey("ingest", "run-1", "report", 3), TaskKey("ingest", "run-2", "load", -1),
                   TaskKey("other", "run-1", "load", -1)):
            await set_task_state(conn, ti, "k", "v")
        assert await purge_run_state(conn, "ingest", "run-1") == 2
        assert await list_task_state(conn, TI) == []
        assert await get_task_state(conn, TaskKey("ingest", "run-2", "load", -1), "k") is not None
        assert await get_task_state(conn, TaskKey("other", "run-1", "load", -1), "k") is not None


async def test_a_conflict_reports_what_is_stored_and_writes_nothing(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await set_task_state(conn, TI, "k", "one")
        await set_task_state(conn, TI, "k", "two")
        with pytest.raises(StateConflict) as raised:
            await set_task_state(conn, TI, "k", "three", Precondition(versions=frozenset({1})))
        assert raised.value.current is not None and raised.value.current.version == 2
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
        await set_asset_state(conn, orders.id, "watermark", "41")
        await set_asset_state(conn, orders.id, "other", "x")
        assert await clear_asset_state(conn, orders.id) == 2
        assert await get_asset_state(conn, orders.id, "watermark") is None


async def test_attaching_needs_a_registered_asset_and_a_known_role(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        with pytest.raises(ValueError, match="not registered"):
            await attach_task_asset(conn, "ingest", "load", "nope", "outlet")
        await register_asset(conn, "orders", "s3://bucket/orders/")
        with pytest.raises(ValueError, match="role"):
            await attach_task_asset(conn, "ingest", "load", "orders", "writer")
