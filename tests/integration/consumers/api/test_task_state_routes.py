"""Task state store routes against the real database: Airflow 3.3's contract, the CAS extension, the
authorization matrix, and the deprecated `/execution/state/…` aliases."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import VALUE_MAX_BYTES
from assetbus.consumers.storage.state import TaskKey, get_task_state, list_task_state
from assetbus.producers import task_token
from assetbus.producers.tokens import issue_token
from assetbus.schemas import Provenance, SourceKind, task_instance_id
from tests.helpers import statements_on

DAG, RUN, TASK = "ingest", "run-1", "load"


def ti_url(task: str = TASK, map_index: int = -1, key: str | None = "checkpoint", prefix: str = "store") -> str:
    ti_id = task_instance_id(DAG, RUN, task, map_index)
    return f"/execution/{prefix}/ti/{ti_id}" + (f"/{key}" if key is not None else "")


def auth(secret: str, task: str = TASK, map_index: int = -1, try_number: int = 1) -> dict[str, str]:
    return {"Authorization": f"Bearer {task_token(secret, DAG, RUN, task, map_index=map_index, try_number=try_number)}"}


def reason(response: httpx.Response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail["message"], str) and detail["message"]
    return str(detail["reason"])


@pytest.mark.parametrize("value", [{"batch": 41, "files": ["a", "b"]}, [1, 2.5, None], "text", 7, 0.5, True, False])
async def test_put_is_204_and_get_returns_the_json_value(api_client: httpx.AsyncClient, token_secret: str,
                                                         value: Any) -> None:
    put = await api_client.put(ti_url(), json={"value": value}, headers=auth(token_secret))
    assert put.status_code == 204 and put.content == b"" and put.headers["etag"] == '"1"'
    got = await api_client.get(ti_url(), headers=auth(token_secret))
    assert got.status_code == 200 and got.json() == {"value": value}
    assert got.headers["etag"] == '"1"' and got.headers["assetbus-api-version"] == "2026-11-29"


async def test_every_write_bumps_the_version(api_client: httpx.AsyncClient, token_secret: str) -> None:
    for expected in (1, 2, 3):
        put = await api_client.put(ti_url(), json={"value": expected}, headers=auth(token_secret))
        assert put.headers["etag"] == f'"{expected}"'


async def test_a_key_with_slashes_is_one_key_as_airflows_key_path(api_client: httpx.AsyncClient,
                                                                  token_secret: str) -> None:
    put = await api_client.put(ti_url(key="jobs%2F2026%2F10"), json={"value": "x"}, headers=auth(token_secret))
    raw = await api_client.get(ti_url(key="jobs/2026/10"), headers=auth(token_secret))
    assert put.status_code == 204 and raw.status_code == 200 and raw.json() == {"value": "x"}


async def test_expires_at_is_stored_and_a_write_without_it_clears_it(api_client: httpx.AsyncClient,
                                                                     token_secret: str, engine: AsyncEngine) -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    ti = TaskKey(DAG, RUN, TASK, -1)
    await api_client.put(ti_url(), json={"value": 1, "expires_at": when.isoformat()}, headers=auth(token_secret))
    async with engine.connect() as conn:
        stored = await get_task_state(conn, ti, "checkpoint")
    assert stored is not None and stored.expires_at == when
    await api_client.put(ti_url(), json={"value": 2}, headers=auth(token_secret))
    async with engine.connect() as conn:
        stored = await get_task_state(conn, ti, "checkpoint")
    assert stored is not None and stored.expires_at is None and stored.value == 2


async def test_an_expired_key_stays_readable_until_the_cleanup_as_in_airflow(api_client: httpx.AsyncClient,
                                                                            token_secret: str) -> None:
    past = datetime.now(UTC) - timedelta(days=1)
    await api_client.put(ti_url(), json={"value": 1, "expires_at": past.isoformat()}, headers=auth(token_secret))
    assert (await api_client.get(ti_url(), headers=auth(token_secret))).json() == {"value": 1}


async def test_a_new_try_of_the_task_reads_what_the_previous_try_wrote(api_client: httpx.AsyncClient,
                                                                      token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": 7}, headers=auth(token_secret, try_number=1))
    got = await api_client.get(ti_url(), headers=auth(token_secret, try_number=2))
    assert got.status_code == 200 and got.json()["value"] == 7


async def test_unknown_key_is_404_with_a_reason(api_client: httpx.AsyncClient, token_secret: str) -> None:
    got = await api_client.get(ti_url(key="nothing-here"), headers=auth(token_secret))
    assert got.status_code == 404 and reason(got) == "not_found"
    assert "nothing-here" in got.json()["detail"]["message"]


async def test_delete_is_204_also_for_an_absent_key(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": 1}, headers=auth(token_secret))
    first = await api_client.delete(ti_url(), headers=auth(token_secret))
    second = await api_client.delete(ti_url(), headers=auth(token_secret))
    assert (first.status_code, second.status_code) == (204, 204)
    assert (first.headers["assetbus-deleted"], second.headers["assetbus-deleted"]) == ("1", "0")
    assert (await api_client.get(ti_url(), headers=auth(token_secret))).status_code == 404


async def test_compare_and_set_with_a_stale_version_is_412_and_keeps_the_value(api_client: httpx.AsyncClient,
                                                                              token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "batch-1"}, headers=auth(token_secret))
    await api_client.put(ti_url(), json={"value": "batch-2"}, headers=auth(token_secret))
    stale = await api_client.put(ti_url(), json={"value": "stale"},
                                 headers={**auth(token_secret), "If-Match": '"1"'})
    assert stale.status_code == 412
    assert reason(stale) == "precondition_failed" and stale.json()["detail"]["current_version"] == 2
    assert stale.headers["etag"] == '"2"'
    fresh = await api_client.put(ti_url(), json={"value": "batch-3"},
                                 headers={**auth(token_secret), "If-Match": '"2"'})
    assert fresh.status_code == 204 and fresh.headers["etag"] == '"3"'
    assert (await api_client.get(ti_url(), headers=auth(token_secret))).json()["value"] == "batch-3"


async def test_two_workers_racing_from_the_same_version_only_one_wins(api_client: httpx.AsyncClient,
                                                                     token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "start"}, headers=auth(token_secret))
    for version in range(1, 6):  # five rounds, eight writers each, all sent at once from the same version
        cas = {**auth(token_secret), "If-Match": f'"{version}"'}
        answers = await asyncio.gather(*(api_client.put(ti_url(), json={"value": f"worker-{n}"}, headers=cas)
                                         for n in range(8)))
        codes = [answer.status_code for answer in answers]
        assert sorted(codes) == [204] + [412] * 7, codes
        winner = f"worker-{codes.index(204)}"
        current = await api_client.get(ti_url(), headers=auth(token_secret))
        assert current.json()["value"] == winner and current.headers["etag"] == f'"{version + 1}"'


async def test_if_none_match_star_creates_only_once(api_client: httpx.AsyncClient, token_secret: str) -> None:
    create_only = {**auth(token_secret), "If-None-Match": "*"}
    first = await api_client.put(ti_url(), json={"value": "a"}, headers=create_only)
    second = await api_client.put(ti_url(), json={"value": "b"}, headers=create_only)
    assert (first.status_code, second.status_code) == (204, 412)
    assert second.json()["detail"]["current_version"] == 1


async def test_if_match_on_an_absent_key_is_412(api_client: httpx.AsyncClient, token_secret: str) -> None:
    put = await api_client.put(ti_url(), json={"value": "a"}, headers={**auth(token_secret), "If-Match": "*"})
    delete = await api_client.delete(ti_url(), headers={**auth(token_secret), "If-Match": '"1"'})
    assert put.status_code == 412 and "current_version" not in put.json()["detail"]
    assert delete.status_code == 412


async def test_delete_with_a_stale_version_is_412(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "a"}, headers=auth(token_secret))
    await api_client.put(ti_url(), json={"value": "b"}, headers=auth(token_secret))
    stale = await api_client.delete(ti_url(), headers={**auth(token_secret), "If-Match": '"1"'})
    current = await api_client.delete(ti_url(), headers={**auth(token_secret), "If-Match": 'W/"2"'})
    assert (stale.status_code, current.status_code) == (412, 204)


async def test_malformed_if_match_is_422(api_client: httpx.AsyncClient, token_secret: str) -> None:
    put = await api_client.put(ti_url(), json={"value": "a"}, headers={**auth(token_secret), "If-Match": "latest"})
    assert put.status_code == 422 and reason(put) == "invalid_request"


@pytest.mark.parametrize("body", [
    b'{"val": "x"}',  # no value
    b'{"value": "x", "ttl_seconds": 60}',  # an unknown field: strict bodies, as Airflow's
    b'{"value": null}',
    b'{"value": NaN}',
    b'{"value": {"rate": Infinity}}',  # refused anywhere in the value, not only at its top
    b'{"value": "a\\u0000b"}',
    b'{"value": {"k\\u0000": 1}}',
    b'{"value": "\\ud800"}',
    b'{"value": 1, "expires_at": "2030-01-01T00:00:00"}',  # a naive datetime
    b'{"value": 1, "expires_at": "soon"}',
    b"not json",
])
async def test_malformed_bodies_are_422_with_a_reason(api_client: httpx.AsyncClient, token_secret: str,
                                                      body: bytes) -> None:
    response = await api_client.put(ti_url(), content=body,
                                    headers={**auth(token_secret), "Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert reason(response) == "invalid_request"
    assert (await api_client.get(ti_url(), headers=auth(token_secret))).status_code == 404


async def test_a_malformed_task_instance_id_is_422(api_client: httpx.AsyncClient, token_secret: str) -> None:
    response = await api_client.get("/execution/store/ti/not-a-uuid/checkpoint", headers=auth(token_secret))
    assert response.status_code == 422 and response.json()["detail"]["errors"]


async def test_the_value_limit_is_measured_as_airflow_measures_it(api_client: httpx.AsyncClient,
                                                                 token_secret: str) -> None:
    at_limit = "x" * (VALUE_MAX_BYTES - 2)  # json.dumps adds the two quotes
    ok = await api_client.put(ti_url(), json={"value": at_limit}, headers=auth(token_secret))
    over = await api_client.put(ti_url(), json={"value": at_limit + "x"}, headers=auth(token_secret))
    escaped = await api_client.put(ti_url(), json={"value": "é" * (VALUE_MAX_BYTES // 6 + 1)},
                                   headers=auth(token_secret))  # json.dumps writes é as \\u00e9: 6 characters
    huge_body = await api_client.put(ti_url(), json={"value": "x" * (1024 * 1024)}, headers=auth(token_secret))
    assert ok.status_code == 204
    assert over.status_code == 422 and reason(over) == "value_too_large"
    assert escaped.status_code == 422 and reason(escaped) == "value_too_large"
    assert huge_body.status_code == 413 and reason(huge_body) == "body_too_large"


async def test_token_of_task_a_on_task_b_state_is_403(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(task="b"), json={"value": "b's"}, headers=auth(token_secret, task="b"))
    for method in ("GET", "PUT", "DELETE"):
        response = await api_client.request(method, ti_url(task="b"), headers=auth(token_secret, task="a"),
                                            json={"value": "a's"} if method == "PUT" else None)
        assert response.status_code == 403, method
        assert reason(response) == "wrong_task_instance"
    clear = await api_client.delete(ti_url(task="b", key=None), headers=auth(token_secret, task="a"))
    assert clear.status_code == 403
    assert (await api_client.get(ti_url(task="b"), headers=auth(token_secret, task="b"))).json()["value"] == "b's"


async def test_mapped_index_1_cannot_read_index_0s_key(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(map_index=0), json={"value": "zero"}, headers=auth(token_secret, map_index=0))
    got = await api_client.get(ti_url(map_index=0), headers=auth(token_secret, map_index=1))
    assert got.status_code == 403 and reason(got) == "wrong_task_instance"
    own = await api_client.get(ti_url(map_index=1), headers=auth(token_secret, map_index=1))
    assert own.status_code == 404


async def test_clear_without_all_map_indices_clears_only_the_callers_index(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine) -> None:
    for index in (0, 1, 2):
        for key in ("a", "b"):
            await api_client.put(ti_url(map_index=index, key=key), json={"value": key},
                                 headers=auth(token_secret, map_index=index))
    cleared = await api_client.delete(ti_url(map_index=1, key=None), headers=auth(token_secret, map_index=1))
    assert cleared.status_code == 204 and cleared.headers["assetbus-deleted"] == "2"
    async with engine.connect() as conn:
        left = {i: len(await list_task_state(conn, TaskKey(DAG, RUN, TASK, i))) for i in (0, 1, 2)}
    assert left == {0: 2, 1: 0, 2: 2}


def mapped_auth(secret: str, map_index: int) -> dict[str, str]:
    """What the state store backend in Airflow's api-server sends: `ti:self ti:mapped`, never `emit`."""
    source = Provenance(kind=SourceKind.TASK, dag_id=DAG, run_id=RUN, task_id=TASK, map_index=map_index, try_number=1)
    return {"Authorization": f"Bearer {issue_token(secret, source, scope='ti:self ti:mapped', publish=[])}"}


async def test_a_task_token_cannot_clear_its_mapped_siblings(api_client: httpx.AsyncClient, token_secret: str,
                                                             engine: AsyncEngine) -> None:
    for index in (0, 1):
        await api_client.put(ti_url(map_index=index), json={"value": "x"}, headers=auth(token_secret, map_index=index))
    refused = await api_client.delete(ti_url(map_index=1, key=None), params={"all_map_indices": "true"},
                                      headers=auth(token_secret, map_index=1))
    assert refused.status_code == 403 and reason(refused) == "insufficient_scope"
    async with engine.connect() as conn:
        assert [len(await list_task_state(conn, TaskKey(DAG, RUN, TASK, i))) for i in (0, 1)] == [1, 1]


async def test_clear_with_all_map_indices_clears_every_index_of_the_task_only(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine) -> None:
    for index in (0, 1):
        await api_client.put(ti_url(map_index=index), json={"value": "x"}, headers=auth(token_secret, map_index=index))
    await api_client.put(ti_url(task="other"), json={"value": "keep"}, headers=auth(token_secret, task="other"))
    cleared = await api_client.delete(ti_url(map_index=1, key=None), params={"all_map_indices": "true"},
                                      headers=mapped_auth(token_secret, map_index=1))
    assert cleared.status_code == 204 and cleared.headers["assetbus-deleted"] == "2"
    async with engine.connect() as conn:
        assert await list_task_state(conn, TaskKey(DAG, RUN, TASK, 0)) == []
        assert len(await list_task_state(conn, TaskKey(DAG, RUN, "other", -1))) == 1


async def test_the_deprecated_state_paths_are_aliases_of_the_store_routes(api_client: httpx.AsyncClient,
                                                                         token_secret: str) -> None:
    put = await api_client.put(ti_url(prefix="state"), json={"value": {"n": 1}}, headers=auth(token_secret))
    got = await api_client.get(ti_url(), headers=auth(token_secret))
    missing = await api_client.get(ti_url(prefix="state", key="nothing"), headers=auth(token_secret))
    cleared = await api_client.delete(ti_url(prefix="state", key=None), headers=auth(token_secret))
    assert put.status_code == 204 and got.json() == {"value": {"n": 1}}
    assert missing.status_code == 404 and reason(missing) == "not_found"
    assert cleared.status_code == 204 and cleared.headers["assetbus-deleted"] == "1"



async def test_each_task_state_request_is_one_sql_statement(api_app: FastAPI, api_client: httpx.AsyncClient,
                                                            token_secret: str) -> None:
    sqlalchemy_statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        sqlalchemy_statements.append(statement)

    engine = api_app.state.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        async with statements_on(api_app.state.database.raw_pool) as statements:
            headers = auth(token_secret)
            calls = [await api_client.put(ti_url(), json={"value": 1}, headers=headers),
                     await api_client.put(ti_url(), json={"value": 2}, headers={**headers, "If-Match": '"1"'}),
                     await api_client.put(ti_url(), json={"value": 3}, headers={**headers, "If-Match": '"1"'}),
                     await api_client.get(ti_url(), headers=headers),
                     await api_client.delete(ti_url(), headers=headers),
                     await api_client.delete(ti_url(key=None), headers=headers)]
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert [c.status_code for c in calls] == [204, 204, 412, 200, 204, 204]
    assert calls[2].json()["detail"]["current_version"] == 2 and calls[2].headers["etag"] == '"2"'
    assert len(statements) == len(calls), statements  # a failed compare-and-set reads the version in its statement
    assert sqlalchemy_statements == []  # prepared asyncpg statements: no SQLAlchemy on the request path
