"""The Airflow state store backend against the running execution API and the real database, sync and async.

Airflow itself is not in this virtualenv: the backend is built with lookups standing in for Airflow's
metadata DB and for the api-server's `StateCallerMiddleware` (the calling task is `ingest.load`), and scopes
with the stand-in dataclasses (the same fields as Airflow's).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import HTTPException
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.state import TaskKey, delete_expired_task_state, get_task_state
from assetbus.consumers.storage.task_assets import attach_task_asset
from assetbus.producers import task_token
from assetbus.producers.airflow.store_assets import AssetAccess, AssetScopeLike
from assetbus.producers.airflow.store_backend import AssetbusStoreBackend
from assetbus.producers.state import StateClient
from tests.helpers import AssetScope, TaskScope

ORDERS_ID, UNDECLARED_ID = 7, 8


def airflow_assets(scope: AssetScopeLike, session: Any | None) -> AssetAccess | None:
    """Stands in for Airflow's metadata DB: asset 7 is `orders`, declared by ingest.load; 8 by no task."""
    if scope.asset_id == ORDERS_ID or scope.name == "orders":
        return AssetAccess(name="orders", dag_id="ingest", task_id="load")
    if scope.asset_id == UNDECLARED_ID:
        return AssetAccess(name="orphan", dag_id="", task_id="")
    return None


@pytest.fixture
async def orders_outlet(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
        await attach_task_asset(conn, "ingest", "load", "orders", "outlet")


def called_by(dag_id: str, task_id: str) -> Any:
    """Stands in for the api-server's middleware: the execution-API request comes from this task instance."""
    return lambda session: (dag_id, "run-9", task_id, -1)


def nobody(session: Any | None) -> None:
    """No execution-API request names a task (no middleware in the api-server, a watcher, a CLI)."""


def detail(error: HTTPException) -> dict[str, Any]:
    """The refusal's JSON detail (FastAPI takes any value there; the attribute is annotated `str` in starlette)."""
    value: object = error.detail
    assert isinstance(value, dict), value
    return value


@pytest.fixture
def backend(api_url: str, token_secret: str) -> AssetbusStoreBackend:
    return AssetbusStoreBackend(api_url, token_secret, asset_lookup=airflow_assets, caller=called_by("ingest", "load"))


async def test_task_values_round_trip_verbatim_and_are_the_task_instances_own(
        backend: AssetbusStoreBackend, api_url: str, token_secret: str) -> None:
    scope = TaskScope("ingest", "run-1", "load")
    value = json.dumps({"zz": 1, "batch": 41, "files": ["a", "b"], "a": {"y": 2, "x": 1}})  # keys not in order

    def airflow_side() -> tuple[str | None, str | None]:
        before = backend.get(scope, "checkpoint")
        backend.set(scope, "checkpoint", value)
        return before, backend.get(scope, "checkpoint")

    assert await asyncio.to_thread(airflow_side) == (None, value)

    def task_side() -> Any:  # the task itself, with its own assetbus token, sees the JSON Airflow encoded
        with StateClient(api_url, task_token(token_secret, "ingest", "run-1", "load", try_number=2)) as client:
            return client.task_state.get("checkpoint")

    seen = await asyncio.to_thread(task_side)
    assert seen == {"zz": 1, "batch": 41, "files": ["a", "b"], "a": {"y": 2, "x": 1}}
    assert list(seen) == ["zz", "batch", "files", "a"] and list(seen["a"]) == ["y", "x"]  # the order it was written
    await asyncio.to_thread(backend.delete, scope, "checkpoint")
    await asyncio.to_thread(backend.delete, scope, "checkpoint")  # absent: a no-op, as Airflow wants
    assert await asyncio.to_thread(backend.get, scope, "checkpoint") is None


async def test_clear_is_one_map_index_unless_all_map_indices(backend: AssetbusStoreBackend) -> None:
    scopes = [TaskScope("ingest", "run-1", "load", map_index=i) for i in (0, 1, 2)]
    for scope in scopes:
        await backend.aset(scope, "k", json.dumps(scope.map_index))
    await backend.aclear(scopes[0])
    assert [await backend.aget(s, "k") for s in scopes] == [None, "1", "2"]
    await asyncio.to_thread(lambda: backend.clear(scopes[1], all_map_indices=True))
    assert [await backend.aget(s, "k") for s in scopes] == [None, None, None]


@pytest.mark.usefixtures("orders_outlet")
async def test_asset_state_by_airflow_asset_id_sync_and_async(backend: AssetbusStoreBackend, api_url: str,
                                                             token_secret: str) -> None:
    scope = AssetScope(asset_id=ORDERS_ID)
    await asyncio.to_thread(backend.set, scope, "watermark", '"2026-10-01"')
    assert await backend.aget(scope, "watermark") == '"2026-10-01"'
    assert await backend.aget(AssetScope(name="orders"), "watermark") == '"2026-10-01"'

    def registered_task() -> Any:
        with StateClient(api_url, task_token(token_secret, "ingest", "other-run", "load")) as client:
            return client.asset("orders").state.get("watermark")

    assert await asyncio.to_thread(registered_task) == "2026-10-01"
    await backend.adelete(scope, "watermark")
    assert await asyncio.to_thread(backend.get, scope, "watermark") is None
    await backend.aset(scope, "a", "1")
    await asyncio.to_thread(backend.clear, scope)
    assert await backend.aget(scope, "a") is None


async def test_expires_at_reaches_assetbus_and_its_retention_cleanup_deletes_the_key(
        backend: AssetbusStoreBackend, engine: AsyncEngine) -> None:
    scope = TaskScope("ingest", "run-1", "load")
    past = datetime.now(UTC) - timedelta(minutes=1)
    later = datetime.now(UTC) + timedelta(days=30)
    await backend.aset(scope, "expired", '"old"', expires_at=past)
    await asyncio.to_thread(lambda: backend.set(scope, "kept", '"new"', expires_at=later))
    await backend.aset(scope, "forever", "1")
    ti = TaskKey("ingest", "run-1", "load", -1)
    async with engine.begin() as conn:
        stored = {key: await get_task_state(conn, ti, key) for key in ("expired", "kept", "forever")}
    assert stored["expired"] is not None and stored["expired"].expires_at == past
    assert stored["kept"] is not None and stored["kept"].expires_at == later
    assert stored["forever"] is not None and stored["forever"].expires_at is None
    backend.cleanup()  # a no-op: the assetbus API runs the retention cleanup itself
    assert await backend.aget(scope, "expired") == '"old"'  # as in Airflow: readable until the cleanup
    async with engine.begin() as conn:
        assert await delete_expired_task_state(conn) == 1  # what the API's periodic cleanup runs
    assert [await backend.aget(scope, k) for k in ("expired", "kept", "forever")] == [None, '"new"', "1"]


async def test_a_value_that_is_not_json_or_too_large_is_a_422(backend: AssetbusStoreBackend) -> None:
    with pytest.raises(HTTPException) as raised:
        await backend.aset(TaskScope("ingest", "run-1", "load"), "k", "not json")
    assert raised.value.status_code == 422 and detail(raised.value)["reason"] == "invalid_value"
    with pytest.raises(HTTPException) as raised:  # Airflow only warns; assetbus refuses
        await backend.aset(TaskScope("ingest", "run-1", "load"), "k", json.dumps("x" * 70_000))
    assert raised.value.status_code == 422 and detail(raised.value)["reason"] == "value_too_large"


async def test_an_asset_no_task_declares_is_a_403_in_airflows_error_shape(backend: AssetbusStoreBackend) -> None:
    with pytest.raises(HTTPException) as raised:
        await backend.aset(AssetScope(asset_id=UNDECLARED_ID), "k", "1")
    assert raised.value.status_code == 403
    assert detail(raised.value)["reason"] == "asset_not_registered"
    assert await backend.aget(AssetScope(asset_id=99), "k") is None  # Airflow knows no such asset


async def test_an_asset_assetbus_has_not_attached_the_task_to_is_refused(backend: AssetbusStoreBackend) -> None:
    with pytest.raises(HTTPException) as raised:  # `orders` is not registered in this test's database
        await asyncio.to_thread(backend.get, AssetScope(asset_id=ORDERS_ID), "k")
    assert raised.value.status_code == 403 and detail(raised.value)["reason"] == "asset_not_registered"


async def test_an_unreachable_api_is_a_503_not_a_500(token_secret: str) -> None:
    backend = AssetbusStoreBackend("http://127.0.0.1:9", token_secret, asset_lookup=airflow_assets)
    with pytest.raises(HTTPException) as raised:
        await backend.aget(TaskScope("ingest", "run-1", "load"), "k")
    assert raised.value.status_code == 503


@pytest.mark.usefixtures("orders_outlet")
async def test_a_calling_task_not_registered_with_the_asset_is_refused(api_url: str, token_secret: str) -> None:
    intruder = AssetbusStoreBackend(api_url, token_secret, asset_lookup=airflow_assets,
                                    caller=called_by("reporting", "peek"))
    calls: list[Callable[[], Awaitable[object]]] = [lambda: intruder.aget(AssetScope(asset_id=ORDERS_ID), "k"),
                                                    lambda: intruder.aset(AssetScope(asset_id=ORDERS_ID), "k", "1")]
    for call in calls:
        with pytest.raises(HTTPException) as raised:
            await call()
        assert raised.value.status_code == 403 and detail(raised.value)["reason"] == "asset_not_registered"


@pytest.mark.usefixtures("orders_outlet")
async def test_an_unidentified_caller_is_refused_unless_the_declared_rule_is_chosen(
        api_url: str, token_secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    strict = AssetbusStoreBackend(api_url, token_secret, asset_lookup=airflow_assets, caller=nobody)
    with pytest.raises(HTTPException) as raised:
        await strict.aset(AssetScope(asset_id=ORDERS_ID), "k", "1")
    assert raised.value.status_code == 403 and detail(raised.value)["reason"] == "caller_not_identified"
    assert "StateCallerMiddleware" in detail(raised.value)["message"]
    with pytest.raises(HTTPException):
        await asyncio.to_thread(strict.get, AssetScope(asset_id=ORDERS_ID), "k")
    assert await strict.aget(TaskScope("ingest", "run-1", "load"), "k") is None  # task state needs no caller

    monkeypatch.setenv("ASSETBUS_STORE_ASSET_STATE", "declared")
    loose = AssetbusStoreBackend(api_url, token_secret, asset_lookup=airflow_assets, caller=nobody)
    await loose.aset(AssetScope(asset_id=ORDERS_ID), "k", "1")  # acts as ingest.load, which declares it
    assert await loose.aget(AssetScope(asset_id=ORDERS_ID), "k") == "1"
    monkeypatch.setenv("ASSETBUS_STORE_ASSET_STATE", "anyone")
    with pytest.raises(ValueError, match="ASSETBUS_STORE_ASSET_STATE='anyone'"):
        AssetbusStoreBackend(api_url, token_secret, asset_lookup=airflow_assets)
