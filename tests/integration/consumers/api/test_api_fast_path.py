"""The task state fast path (`api/fast_path.py`) answers exactly as FastAPI does, and skips FastAPI's
dependency resolution for the requests it takes."""

from __future__ import annotations

from typing import Any

import fastapi.routing
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.producers import dag_token, task_token
from assetbus.schemas import task_instance_id

DAG, RUN, TASK = "ingest", "run-1", "load"
TI = task_instance_id(DAG, RUN, TASK, -1)
OTHER_TI = task_instance_id(DAG, RUN, "other", -1)
URL = f"/execution/store/ti/{TI}/checkpoint"


def _requests(secret: str) -> list[tuple[str, str, dict[str, str], Any]]:
    """(method, path, headers, body: JSON, raw bytes or None): the happy paths and every edge the fast path
    must either answer as FastAPI does or leave to it."""
    auth = {"Authorization": f"Bearer {task_token(secret, DAG, RUN, TASK)}"}
    cases: list[tuple[str, str, dict[str, str], Any]] = [
        ("GET", URL, auth, None),  # 404 before anything is written
        ("PUT", URL, auth, {"value": {"batch": 41, "name": "é"}}),
        ("PUT", URL, {**auth, "If-Match": '"1"'}, {"value": [1, 2.5, "x"]}),
        ("PUT", URL, {**auth, "If-Match": '"1"'}, {"value": 3}),  # 412, current version 2
        ("PUT", URL, {**auth, "If-None-Match": "*"}, {"value": 3}),  # 412
        ("PUT", URL, {**auth, "If-Match": "nonsense"}, {"value": 3}),  # 422 from the handler
        ("GET", URL, auth, None),
        ("GET", f"/execution/state/ti/{TI}/checkpoint", auth, None),  # the deprecated alias
        ("PUT", URL, auth, {"value": None}),  # 422 null
        ("PUT", URL, auth, {"value": "x" * 70_000}),  # 422 value_too_large
        ("PUT", URL, auth, {"value": 1, "extra": 2}),  # strict body: FastAPI's 422 with field errors
        ("PUT", URL, auth, {"value": 1, "expires_at": "2030-01-01T00:00:00"}),  # naive expiry: 422
        ("PUT", URL, auth, {"value": 1, "expires_at": "2030-01-01T00:00:00+00:00"}),
        ("PUT", URL, auth, b"{not json"),
        ("PUT", URL, {**auth, "Content-Type": "text/plain"}, b'{"value": 1}'),
        ("PUT", URL, auth, b""),
        ("GET", URL, {}, None),  # 401 missing token
        ("GET", URL, {"Authorization": "Basic abc"}, None),
        ("GET", URL, {"Authorization": "Bearer not-a-token"}, None),  # 401 invalid
        ("GET", URL, {"Authorization": f"Bearer {dag_token(secret, DAG, RUN)}"}, None),  # 403 not a task token
        ("GET", f"/execution/store/ti/{OTHER_TI}/checkpoint", auth, None),  # 403 wrong task instance
        ("GET", f"/execution/store/ti/{TI.hex}/checkpoint", auth, None),  # another spelling of the id
        ("GET", "/execution/store/ti/not-a-uuid/checkpoint", auth, None),
        ("GET", f"/execution/store/ti/{TI}/..", auth, None),  # key pattern
        ("GET", f"/execution/store/ti/{TI}/", auth, None),  # empty key
        ("GET", f"/execution/store/ti/{TI}/jobs%2F2026", auth, None),
        ("DELETE", URL, {**auth, "If-Match": '"9"'}, None),  # 412
        ("DELETE", URL, auth, None),
        ("DELETE", URL, auth, None),  # absent: still 204, deleted 0
        ("DELETE", URL, {**auth, "If-Match": "*"}, None),  # absent with a precondition: 412
        ("POST", URL, auth, {"value": 1}),  # 405
    ]
    return cases


async def _answers(app: fastapi.FastAPI, secret: str) -> list[tuple[int, list[tuple[str, str]], bytes]]:
    answers = []
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://assetbus.test") as client:
        for method, path, headers, body in _requests(secret):
            sent = ({"content": body} if isinstance(body, bytes) else {"json": body} if body is not None else {})
            response = await client.request(method, path, headers=headers, **sent)
            answers.append((response.status_code, list(response.headers.multi_items()), response.content))
    return answers


@pytest.fixture
def counted_dependency_resolution(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times FastAPI resolved a route's dependencies (one entry per request it routed)."""
    calls: list[int] = []
    original = fastapi.routing.solve_dependencies

    async def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await original(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    return calls


async def _reset(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("DELETE FROM task_state"))


async def test_the_fast_path_answers_every_request_as_fastapi_does(
        api_config: ApiConfig, engine: AsyncEngine, token_secret: str) -> None:
    fast = await _answers(create_api(api_config), token_secret)
    await _reset(engine)
    slow = await _answers(create_api(api_config.model_copy(update={"fast_path": False})), token_secret)
    assert [status for status, *_ in fast] == [status for status, *_ in slow]
    for case, (fast_answer, slow_answer) in enumerate(zip(fast, slow, strict=True)):
        assert fast_answer == slow_answer, _requests(token_secret)[case][:2]
    statuses = {status for status, *_ in fast}
    assert {200, 204, 401, 403, 404, 405, 412, 422} <= statuses  # the table reaches every outcome


async def test_a_well_formed_key_request_skips_fastapi_dependency_resolution(
        api_config: ApiConfig, token_secret: str, counted_dependency_resolution: list[int]) -> None:
    auth = {"Authorization": f"Bearer {task_token(token_secret, DAG, RUN, TASK)}"}
    app = create_api(api_config)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://assetbus.test") as client:
        answered = [(await client.put(URL, json={"value": 1}, headers=auth)).status_code,
                    (await client.get(URL, headers=auth)).status_code,
                    (await client.delete(URL, headers=auth)).status_code]
        assert answered == [204, 200, 204] and counted_dependency_resolution == []
        left = await client.put(URL, json={"value": 1, "unknown": 1}, headers=auth)  # FastAPI's 422
        assert left.status_code == 422 and left.json()["detail"]["errors"]
        assert counted_dependency_resolution == [1]
        metrics = (await client.get("/metrics")).text
    counted = 'method="GET",route="/execution/store/ti/{task_instance_id}/{key:path}",status="200"} 1.0'
    assert counted in metrics  # counted under its route template, as a routed request is

