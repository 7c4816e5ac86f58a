"""The api-server's `StateCallerMiddleware` names the task instance of each execution-API request, for as long
as the request lasts, and nothing else: no other path, no other request, no token without a task."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import MutableMapping
from typing import Any

import jwt

from assetbus.producers.airflow.store_assets import StateCallerMiddleware, calling_task_instance_id


def _token(sub: str) -> bytes:
    secret = "an-airflow-jwt-secret-this-test-never-checks"
    return jwt.encode({"sub": sub, "scope": "execution"}, secret, algorithm="HS256").encode()


async def _seen(path: str, headers: list[tuple[bytes, bytes]], scope_type: str = "http") -> Any:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(await asyncio.to_thread(calling_task_instance_id))  # a sync route runs in a thread

    async def receive() -> MutableMapping[str, Any]:
        raise AssertionError("the middleware reads no request body")

    async def send(message: MutableMapping[str, Any]) -> None:
        raise AssertionError("the middleware sends no response")

    await StateCallerMiddleware(app)({"type": scope_type, "path": path, "root_path": "", "headers": headers},
                                     receive, send)
    assert calling_task_instance_id() is None  # only while the request lasts
    return seen[0]


async def test_an_execution_api_request_names_its_task_instance() -> None:
    ti = uuid.uuid4()
    found = await _seen("/execution/store/asset/by-name/value", [(b"authorization", b"Bearer " + _token(str(ti)))])
    assert found == ti


async def test_other_paths_bodies_and_tokens_name_no_task() -> None:
    ti = str(uuid.uuid4())
    assert await _seen("/api/v2/assets", [(b"authorization", b"Bearer " + _token(ti))]) is None
    assert await _seen("/execution/store/asset/by-name/value", []) is None
    assert await _seen("/execution/x", [(b"authorization", b"Basic " + _token(ti))]) is None
    assert await _seen("/execution/x", [(b"authorization", b"Bearer not-a-jwt")]) is None
    assert await _seen("/execution/x", [(b"authorization", b"Bearer " + _token("admin"))]) is None
    null = str(uuid.UUID(int=0))  # Airflow's id for an AssetWatcher: no task
    assert await _seen("/execution/x", [(b"authorization", b"Bearer " + _token(null))]) is None
    assert await _seen("/execution/x", [(b"authorization", b"Bearer " + _token(ti))], scope_type="websocket") is None


async def test_concurrent_requests_each_see_their_own_task() -> None:
    tis = [uuid.uuid4() for _ in range(5)]
    found = await asyncio.gather(*(_seen("/execution/x", [(b"authorization", b"Bearer " + _token(str(t)))])
                                   for t in tis))
    assert found == tis
