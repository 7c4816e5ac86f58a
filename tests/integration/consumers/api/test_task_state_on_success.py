"""clear_on_success (Airflow 3.3's `[state_store] clear_on_success`) through
`POST /execution/store/ti/{task_instance_id}/on-success`, and the API's periodic retention cleanup."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.storage.state import TaskKey, list_task_state
from assetbus.producers import task_token
from assetbus.schemas import task_instance_id
from tests.helpers import wait_for

DAG, RUN, TASK = "ingest", "run-1", "load"


def ti_url(map_index: int = -1) -> str:
    return f"/execution/store/ti/{task_instance_id(DAG, RUN, TASK, map_index)}"


def auth(secret: str, map_index: int = -1, task: str = TASK) -> dict[str, str]:
    return {"Authorization": f"Bearer {task_token(secret, DAG, RUN, task, map_index=map_index)}"}


MakeClient = Callable[..., Awaitable[httpx.AsyncClient]]


@pytest.fixture
async def client_with(api_config: ApiConfig) -> AsyncIterator[MakeClient]:
    """A factory: an in-process client of an API built from `api_config` with some settings changed."""
    async with contextlib.AsyncExitStack() as stack:
        async def make(**changes: object) -> httpx.AsyncClient:
            app = create_api(api_config.model_copy(update=changes))
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            return await stack.enter_async_context(httpx.AsyncClient(transport=transport,
                                                                     base_url="http://assetbus.test"))

        yield make


async def _write_two_indices(client: httpx.AsyncClient, secret: str) -> None:
    for index in (0, 1):
        for key in ("a", "b"):
            put = await client.put(f"{ti_url(index)}/{key}", json={"value": key}, headers=auth(secret, index))
            assert put.status_code == 204


async def test_on_success_clears_the_instances_own_state_when_clear_on_success_is_on(
        client_with: MakeClient, token_secret: str, engine: AsyncEngine) -> None:
    client = await client_with(state_clear_on_success=True)
    await _write_two_indices(client, token_secret)
    done = await client.post(f"{ti_url(0)}/on-success", headers=auth(token_secret, 0))
    assert done.status_code == 204 and done.headers["assetbus-deleted"] == "2"
    async with engine.connect() as conn:
        assert await list_task_state(conn, TaskKey(DAG, RUN, TASK, 0)) == []
        assert len(await list_task_state(conn, TaskKey(DAG, RUN, TASK, 1))) == 2  # a sibling keeps its own


async def test_on_success_keeps_the_state_by_default_as_airflow_does(client_with: MakeClient, token_secret: str,
                                                                    engine: AsyncEngine) -> None:
    client = await client_with()
    await _write_two_indices(client, token_secret)
    done = await client.post(f"{ti_url(0)}/on-success", headers=auth(token_secret, 0))
    assert done.status_code == 204 and done.headers["assetbus-deleted"] == "0"
    async with engine.connect() as conn:
        assert len(await list_task_state(conn, TaskKey(DAG, RUN, TASK, 0))) == 2


async def test_on_success_of_another_task_instance_is_403(client_with: MakeClient, token_secret: str) -> None:
    client = await client_with(state_clear_on_success=True)
    other = await client.post(f"{ti_url(0)}/on-success", headers=auth(token_secret, 0, task="other"))
    assert other.status_code == 403 and other.json()["detail"]["reason"] == "wrong_task_instance"


async def test_the_api_deletes_expired_task_state_periodically(client_with: MakeClient, token_secret: str,
                                                               engine: AsyncEngine) -> None:
    client = await client_with(state_cleanup_interval_s=0.2, state_cleanup_batch_size=1)
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    for key, body in (("old-1", {"value": 1, "expires_at": past}), ("old-2", {"value": 2, "expires_at": past}),
                      ("later", {"value": 3, "expires_at": future}), ("forever", {"value": 4})):
        assert (await client.put(f"{ti_url()}/{key}", json=body, headers=auth(token_secret))).status_code == 204

    async def keys() -> set[str]:
        async with engine.connect() as conn:
            return {entry.key for entry in await list_task_state(conn, TaskKey(DAG, RUN, TASK, -1))}

    async def only_unexpired_left() -> bool:
        return await keys() == {"later", "forever"}

    await wait_for(only_unexpired_left, timeout_s=10, what="the periodic cleanup")
    assert await keys() == {"later", "forever"}
