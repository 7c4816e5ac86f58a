"""The fast path (`api/fast_path.py`) answers the task state key routes and the HTTP emit exactly as FastAPI
does, and skips FastAPI's dependency resolution for the requests it takes."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import fastapi.dependencies.utils
import fastapi.routing
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.storage import register_asset
from assetbus.producers import dag_token, issue_token, task_token
from assetbus.schemas import Provenance, SourceKind, task_instance_id

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
        ("PUT", URL, auth, b'{"value": 1}'),  # JSON without a content type: FastAPI does not read it as JSON
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


Answer = tuple[int, list[tuple[str, str]], bytes]


@contextlib.asynccontextmanager
async def _serving(app: fastapi.FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `app`, its lifespan running (database pools, producer, reply reader)."""
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://assetbus.test") as client:
        yield client


async def _answers(app: fastapi.FastAPI, requests: list[tuple[str, str, dict[str, str], Any]]) -> list[Answer]:
    answers = []
    async with _serving(app) as client:
        for method, path, headers, body in requests:
            sent = ({"content": body} if isinstance(body, bytes) else {"json": body} if body is not None else {})
            response = await client.request(method, path, headers=headers, **sent)
            answers.append((response.status_code, list(response.headers.multi_items()), response.content))
    return answers


@pytest.fixture
def counted_dependency_resolution(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times FastAPI resolved a route's dependencies (one entry per request it routed)."""
    calls: list[int] = []
    original = fastapi.dependencies.utils.solve_dependencies  # defined there, called by fastapi.routing

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
    fast = await _answers(create_api(api_config), _requests(token_secret))
    await _reset(engine)
    slow = await _answers(create_api(api_config.model_copy(update={"fast_path": False})), _requests(token_secret))
    assert [status for status, *_ in fast] == [status for status, *_ in slow]
    for case, (fast_answer, slow_answer) in enumerate(zip(fast, slow, strict=True)):
        assert fast_answer == slow_answer, _requests(token_secret)[case][:2]
    statuses = {status for status, *_ in fast}
    assert {200, 204, 401, 403, 404, 405, 412, 422} <= statuses  # the table reaches every outcome


async def test_a_well_formed_key_request_skips_fastapi_dependency_resolution(
        api_config: ApiConfig, token_secret: str, counted_dependency_resolution: list[int]) -> None:
    auth = {"Authorization": f"Bearer {task_token(token_secret, DAG, RUN, TASK)}"}
    app = create_api(api_config)
    async with _serving(app) as client:
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



# --- the HTTP emit ---------------------------------------------------------------------------------

EMIT = "/execution/asset-events/emit"
ORDERS = {"name": "orders", "uri": "s3://bucket/orders/"}
_STORED_AT = re.compile(rb'"timestamp":"[^"]*"')
_RANDOM_ID = re.compile(rb'"correlation_id":"[^"]*"')


def _emit_requests(secret: str) -> list[tuple[str, str, dict[str, str], Any]]:
    """Emits that the fast path answers (accepted, a resend, duplicate, every kind of rejection) and those it leaves to
    FastAPI; each good emit names its command id, so both runs send the same commands."""
    auth = {"Authorization": f"Bearer {task_token(secret, DAG, RUN, TASK)}"}
    json_auth = {**auth, "Content-Type": "application/json"}
    no_emit_scope = issue_token(secret, Provenance(kind=SourceKind.TASK, dag_id=DAG, run_id=RUN, task_id=TASK,
                                                   map_index=-1, try_number=1), scope="ti:self")
    other_asset = task_token(secret, DAG, RUN, TASK, publish=[{"name": "other", "uri": "s3://other/"}])
    ids = [str(uuid.UUID(int=i)) for i in range(1, 12)]
    good = {"asset": ORDERS, "extra": {"rows": 100, "name": "é"}, "partition_key": "2026-10-01",
            "partition_date": "2026-10-01T00:00:00+00:00", "dedupe_key": "batch-41", "command_id": ids[0]}
    return [
        ("POST", EMIT, auth, good),  # accepted
        ("POST", EMIT, auth, good),  # its resend: accepted again, with the same event
        ("POST", EMIT, auth, {**good, "command_id": ids[10]}),  # another command, same dedupe key: duplicate
        ("POST", EMIT, auth, {"asset": ORDERS, "dedupe_key": "batch-42"}),  # accepted, a random command id
        ("POST", EMIT, auth, {"asset": ORDERS, "command_id": ids[1], "source": {"dag_id": "evil"}}),  # ignored
        ("POST", EMIT, {"Authorization": f"Bearer {dag_token(secret, DAG, RUN)}"},
         {"asset": ORDERS, "command_id": ids[2]}),  # a DAG-run token
        ("POST", EMIT, auth, {"asset": {"name": "nope", "uri": "s3://nope/"}, "command_id": ids[3]}),  # 404
        ("POST", EMIT, auth, {"asset": ORDERS, "partition_date": "2026-10-01T00:00:00+00:00",
                              "command_id": ids[4]}),  # 422 invalid_partition, from the persister
        ("POST", EMIT, auth, {"asset": ORDERS, "extra": {"blob": "x" * (70 * 1024)}, "command_id": ids[5]}),  # 413
        ("POST", EMIT, json_auth, b'{"asset": {"name": "orders", "uri": "s3://bucket/orders/"}, '
         b'"extra": {"s": "\\ud800"}, "command_id": "' + ids[6].encode() + b'"}'),  # 422: cannot be encoded
        ("POST", EMIT, {"Authorization": f"Bearer {no_emit_scope}"}, {"asset": ORDERS}),  # 403 insufficient_scope
        ("POST", EMIT, {"Authorization": f"Bearer {other_asset}"}, {"asset": ORDERS}),  # 403 asset_not_declared
        ("POST", EMIT, {"Authorization": "Bearer not-a-token"}, {"asset": ORDERS}),  # 401 invalid_token
        ("POST", EMIT, {}, {"asset": ORDERS}),  # 401 missing token
        ("POST", EMIT, {"Authorization": "Basic abc"}, {"asset": ORDERS}),
        ("POST", EMIT, {"Authorization": "bearer " + auth["Authorization"][7:]},
         {"asset": ORDERS, "command_id": ids[7]}),  # HTTPBearer's scheme is case-insensitive
        ("POST", EMIT, auth, b'{"asset": {"name": "orders", "uri": "s3://bucket/orders/"}}'),  # no content type
        ("POST", EMIT, {**auth, "Content-Type": "text/plain"}, b'{"asset": {"name": "orders", "uri": "s3://x/"}}'),
        ("POST", EMIT, {**auth, "Content-Type": "application/json; charset=utf-8"},
         b'{"asset": {"name": "orders", "uri": "s3://bucket/orders/"}, "command_id": "' + ids[8].encode() + b'"}'),
        ("POST", EMIT, json_auth, b"{not json"),
        ("POST", EMIT, auth, {}),  # 422 field errors
        ("POST", EMIT, auth, {"asset": ORDERS, "extra": []}),
        ("POST", EMIT, auth, {"asset": ORDERS, "partition_key": ""}),
        ("POST", EMIT, auth, {"asset": ORDERS, "command_id": "not-a-uuid"}),
        ("POST", EMIT, {**auth, "Assetbus-API-Version": "1999-01-01"}, {"asset": ORDERS}),  # 400
        ("POST", EMIT + "/", auth, {"asset": ORDERS, "command_id": ids[9]}),
        ("GET", EMIT, auth, None),  # 405
    ]


def _comparable(answer: Answer, random_id: bool) -> Answer:
    """The answer without what differs between two runs by nature: the receipt's stored time (and the
    correlation id that the API drew for a command sent without one); its length is checked instead."""
    status, headers, body = answer
    length = [value for name, value in headers if name == "content-length"]
    assert length == [str(len(body))]
    body = _STORED_AT.sub(b'"timestamp":"*"', body)
    if random_id:
        body = _RANDOM_ID.sub(b'"correlation_id":"*"', body)
    return status, [(name, value) for name, value in headers if name != "content-length"], body


async def _reset_events(engine: AsyncEngine) -> None:
    """No events, and the next one is event 1 again (both runs get the same event ids)."""
    async with engine.begin() as conn:
        await conn.execute(text("TRUNCATE asset_events RESTART IDENTITY CASCADE"))


@pytest.fixture
async def orders(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS["name"], ORDERS["uri"])
    await _reset_events(engine)


@pytest.mark.usefixtures("orders", "persister")
async def test_the_fast_path_answers_every_emit_as_fastapi_does(
        api_config: ApiConfig, engine: AsyncEngine, token_secret: str) -> None:
    requests = _emit_requests(token_secret)
    fast = await _answers(create_api(api_config), requests)
    await _reset_events(engine)
    slow = await _answers(create_api(api_config.model_copy(update={"fast_path": False})), requests)
    for case, (fast_answer, slow_answer) in enumerate(zip(fast, slow, strict=True)):
        random_id = case == 3
        assert _comparable(fast_answer, random_id) == _comparable(slow_answer, random_id), requests[case][:3]
    assert [status for status, *_ in fast[:10]] == [200, 200, 200, 200, 200, 200, 404, 422, 413, 422]
    assert fast[1][2] == fast[0][2]  # the resend is answered with the first receipt, byte for byte
    assert [b'"status":"accepted"' in body for *_, body in fast[:3]] == [True, True, False]  # then the duplicate
    assert {400, 401, 403, 405} <= {status for status, *_ in fast}


@pytest.mark.usefixtures("orders", "persister")
async def test_a_well_formed_emit_skips_fastapi_dependency_resolution(
        api_config: ApiConfig, token_secret: str, counted_dependency_resolution: list[int]) -> None:
    auth = {"Authorization": f"Bearer {task_token(token_secret, DAG, RUN, TASK)}"}
    app = create_api(api_config)
    async with _serving(app) as client:
        accepted = await client.post(EMIT, json={"asset": ORDERS}, headers=auth)
        assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
        assert counted_dependency_resolution == []
        left = await client.post(EMIT, json={"asset": ORDERS, "command_id": "not-a-uuid"}, headers=auth)
        assert left.status_code == 422 and left.json()["errors"]  # FastAPI's field errors
        assert counted_dependency_resolution == [1]
        metrics = (await client.get("/metrics")).text
    assert 'method="POST",route="/execution/asset-events/emit",status="200"} 1.0' in metrics
