"""The state SDK against the running execution API (uvicorn) and the real database, sync and async."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.state import TaskKey, get_task_state
from assetbus.consumers.storage.task_assets import attach_task_asset
from assetbus.producers import task_token
from assetbus.producers.state import AsyncStateClient, StateClient, StateConflict, StateForbidden
from assetbus.producers.tokens import issue_token
from assetbus.schemas import Provenance, SourceKind


@pytest.fixture
async def orders_outlet(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
        await attach_task_asset(conn, "ingest", "load", "orders", "outlet")


async def test_async_task_state_round_trip_with_compare_and_set(api_url: str, token_secret: str) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load")
    async with AsyncStateClient(api_url, token) as client:
        state = client.task_state
        assert await state.get("checkpoint") is None
        first = await state.set("checkpoint", "1", only_if_absent=True)
        second = await state.set("checkpoint", "2", if_version=first.version)
        with pytest.raises(StateConflict) as raised:
            await state.set("checkpoint", "stale", if_version=first.version)
        assert raised.value.current_version == second.version == 2
        assert await state.get("checkpoint") == "2"
        entry = await state.get_entry("checkpoint")
        assert entry is not None and entry.version == 2
        assert await state.delete("checkpoint") is True
        assert await state.delete("checkpoint") is False


async def test_async_json_values_and_an_expiry_round_trip(api_url: str, token_secret: str,
                                                          engine: AsyncEngine) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load")
    value = {"batch": 41, "files": ["a.csv", "b.csv"], "rate": 0.5, "done": False}
    when = datetime.now(UTC) + timedelta(days=30)
    async with AsyncStateClient(api_url, token) as client:
        await client.task_state.set("checkpoint", value, expires_at=when)
        await client.task_state.set("jobs/2026-10-01", [1, 2])
        assert await client.task_state.get("checkpoint") == value
        assert await client.task_state.get("jobs/2026-10-01") == [1, 2]
    async with engine.connect() as conn:
        stored = await get_task_state(conn, TaskKey("ingest", "run-1", "load", -1), "checkpoint")
    assert stored is not None and stored.expires_at == when


async def test_async_clear_of_one_map_index_and_of_all(api_url: str, token_secret: str) -> None:
    clients = [AsyncStateClient(api_url, task_token(token_secret, "ingest", "run-1", "load", map_index=i))
               for i in (0, 1, 2)]
    try:
        for client in clients:
            await client.task_state.set("k", "v")
        assert await clients[0].task_state.clear() == 1
        assert await clients[1].task_state.get("k") == "v"
        with pytest.raises(StateForbidden) as refused:  # a task token may not clear its mapped siblings
            await clients[1].task_state.clear(all_map_indices=True)
        assert refused.value.code == "insufficient_scope"
        source = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=1,
                            try_number=1)
        async with AsyncStateClient(api_url, issue_token(token_secret, source, scope="ti:self ti:mapped",
                                                         publish=[])) as backend:  # as Airflow's api-server
            assert await backend.task_state.clear(all_map_indices=True) == 2
        assert await clients[2].task_state.get("k") is None
    finally:
        for client in clients:
            await client.aclose()


@pytest.mark.usefixtures("orders_outlet")
async def test_async_asset_state_for_a_registered_task_and_403_for_another(api_url: str,
                                                                          token_secret: str) -> None:
    async with AsyncStateClient(api_url, task_token(token_secret, "ingest", "run-1", "load")) as loader, \
            AsyncStateClient(api_url, task_token(token_secret, "ingest", "run-1", "audit")) as auditor:
        await loader.asset("orders").state.set("watermark", "2026-10-01")
        assert await loader.asset("orders").state.get("watermark") == "2026-10-01"
        with pytest.raises(StateForbidden) as raised:
            await auditor.asset("orders").state.get("watermark")
        assert raised.value.code == "asset_not_registered"
        assert await loader.asset("orders").state.clear() == 1


@pytest.mark.usefixtures("orders_outlet")
async def test_sync_client_does_the_same_from_plain_code(api_url: str, token_secret: str) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load")

    def task_code() -> tuple[str | None, str | None, int]:
        with StateClient(api_url, token) as client:
            client.task_state.set("checkpoint", "41")
            client.asset("orders").state.set("watermark", "41")
            return (client.task_state.get("checkpoint"), client.asset("orders").state.get("watermark"),
                    client.task_state.clear())

    # the server runs in this event loop, so the blocking client runs in a thread
    assert await asyncio.to_thread(task_code) == ("41", "41", 1)
