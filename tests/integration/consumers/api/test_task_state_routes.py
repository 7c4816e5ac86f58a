"""Task state routes against the real database: happy paths, every status, the authorization matrix."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import VALUE_MAX_BYTES
from assetbus.consumers.storage.state import TaskKey, list_task_state
from assetbus.producers import task_token
from assetbus.schemas import task_instance_id

DAG, RUN, TASK = "ingest", "run-1", "load"


def ti_url(task: str = TASK, map_index: int = -1, key: str | None = "checkpoint") -> str:
    ti_id = task_instance_id(DAG, RUN, task, map_index)
    return f"/execution/state/ti/{ti_id}" + (f"/{key}" if key is not None else "")


def auth(secret: str, task: str = TASK, map_index: int = -1, try_number: int = 1) -> dict[str, str]:
    return {"Authorization": f"Bearer {task_token(secret, DAG, RUN, task, map_index=map_index, try_number=try_number)}"}


async def test_put_then_get_returns_the_value_with_its_version_as_etag(api_client: httpx.AsyncClient,
                                                                       token_secret: str) -> None:
    put = await api_client.put(ti_url(), json={"value": '{"batch": 41}'}, headers=auth(token_secret))
    assert put.status_code == 200
    assert put.json()["version"] == 1 and put.headers["etag"] == '"1"'
    got = await api_client.get(ti_url(), headers=auth(token_secret))
    assert got.status_code == 200
    assert got.json()["value"] == '{"batch": 41}' and got.json()["key"] == "checkpoint"
    assert got.headers["etag"] == '"1"' and got.headers["assetbus-api-version"] == "2026-11-29"


async def test_every_write_bumps_the_version(api_client: httpx.AsyncClient, token_secret: str) -> None:
    for expected in (1, 2, 3):
        put = await api_client.put(ti_url(), json={"value": str(expected)}, headers=auth(token_secret))
        assert put.json()["version"] == expected


async def test_a_new_try_of_the_task_reads_what_the_previous_try_wrote(api_client: httpx.AsyncClient,
                                                                      token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "7"}, headers=auth(token_secret, try_number=1))
    got = await api_client.get(ti_url(), headers=auth(token_secret, try_number=2))
    assert got.status_code == 200 and got.json()["value"] == "7"


async def test_unknown_key_is_404_with_a_reason(api_client: httpx.AsyncClient, token_secret: str) -> None:
    got = await api_client.get(ti_url(key="nothing-here"), headers=auth(token_secret))
    assert got.status_code == 404
    assert got.json()["code"] == "key_not_found" and "nothing-here" in got.json()["message"]


async def test_delete_removes_the_key_and_a_second_delete_is_404(api_client: httpx.AsyncClient,
                                                                token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "1"}, headers=auth(token_secret))
    first = await api_client.delete(ti_url(), headers=auth(token_secret))
    second = await api_client.delete(ti_url(), headers=auth(token_secret))
    assert (first.status_code, second.status_code) == (204, 404)
    assert (await api_client.get(ti_url(), headers=auth(token_secret))).status_code == 404


async def test_compare_and_set_with_a_stale_version_is_412_and_keeps_the_value(api_client: httpx.AsyncClient,
                                                                              token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "batch-1"}, headers=auth(token_secret))
    await api_client.put(ti_url(), json={"value": "batch-2"}, headers=auth(token_secret))
    stale = await api_client.put(ti_url(), json={"value": "stale"},
                                 headers={**auth(token_secret), "If-Match": '"1"'})
    assert stale.status_code == 412
    assert stale.json()["code"] == "precondition_failed" and stale.json()["current_version"] == 2
    assert stale.headers["etag"] == '"2"'
    fresh = await api_client.put(ti_url(), json={"value": "batch-3"},
                                 headers={**auth(token_secret), "If-Match": '"2"'})
    assert fresh.status_code == 200 and fresh.json()["version"] == 3
    assert (await api_client.get(ti_url(), headers=auth(token_secret))).json()["value"] == "batch-3"


async def test_two_workers_racing_from_the_same_version_only_one_wins(api_client: httpx.AsyncClient,
                                                                     token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "start"}, headers=auth(token_secret))
    cas = {**auth(token_secret), "If-Match": '"1"'}
    a = await api_client.put(ti_url(), json={"value": "worker-a"}, headers=cas)
    b = await api_client.put(ti_url(), json={"value": "worker-b"}, headers=cas)
    assert sorted([a.status_code, b.status_code]) == [200, 412]


async def test_if_none_match_star_creates_only_once(api_client: httpx.AsyncClient, token_secret: str) -> None:
    create_only = {**auth(token_secret), "If-None-Match": "*"}
    first = await api_client.put(ti_url(), json={"value": "a"}, headers=create_only)
    second = await api_client.put(ti_url(), json={"value": "b"}, headers=create_only)
    assert (first.status_code, second.status_code) == (200, 412)
    assert second.json()["current_version"] == 1


async def test_if_match_on_an_absent_key_is_412(api_client: httpx.AsyncClient, token_secret: str) -> None:
    put = await api_client.put(ti_url(), json={"value": "a"}, headers={**auth(token_secret), "If-Match": "*"})
    assert put.status_code == 412 and "current_version" not in put.json()


async def test_delete_with_a_stale_version_is_412(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(), json={"value": "a"}, headers=auth(token_secret))
    await api_client.put(ti_url(), json={"value": "b"}, headers=auth(token_secret))
    stale = await api_client.delete(ti_url(), headers={**auth(token_secret), "If-Match": '"1"'})
    current = await api_client.delete(ti_url(), headers={**auth(token_secret), "If-Match": 'W/"2"'})
    assert (stale.status_code, current.status_code) == (412, 204)


async def test_malformed_if_match_is_422(api_client: httpx.AsyncClient, token_secret: str) -> None:
    put = await api_client.put(ti_url(), json={"value": "a"}, headers={**auth(token_secret), "If-Match": "latest"})
    assert put.status_code == 422 and put.json()["code"] == "invalid_request"


async def test_malformed_input_is_422_with_field_errors(api_client: httpx.AsyncClient, token_secret: str) -> None:
    no_value = await api_client.put(ti_url(), json={"val": "x"}, headers=auth(token_secret))
    not_a_uuid = await api_client.get("/execution/state/ti/not-a-uuid/checkpoint", headers=auth(token_secret))
    nul = await api_client.put(ti_url(), json={"value": "a\u0000b"}, headers=auth(token_secret))
    surrogate = await api_client.put(ti_url(), content=b'{"value": "\\ud800"}',
                                     headers={**auth(token_secret), "Content-Type": "application/json"})
    for response in (no_value, not_a_uuid, nul, surrogate):
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "invalid_request" and response.json()["errors"]


async def test_a_value_over_the_limit_is_413(api_client: httpx.AsyncClient, token_secret: str) -> None:
    at_limit = await api_client.put(ti_url(), json={"value": "x" * VALUE_MAX_BYTES}, headers=auth(token_secret))
    over = await api_client.put(ti_url(), json={"value": "x" * (VALUE_MAX_BYTES + 1)}, headers=auth(token_secret))
    huge_body = await api_client.put(ti_url(), json={"value": "x" * (1024 * 1024)}, headers=auth(token_secret))
    assert at_limit.status_code == 200
    assert over.status_code == 413 and over.json()["code"] == "value_too_large"
    assert huge_body.status_code == 413 and huge_body.json()["code"] == "body_too_large"


async def test_token_of_task_a_on_task_b_state_is_403(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(task="b"), json={"value": "b's"}, headers=auth(token_secret, task="b"))
    for method in ("GET", "PUT", "DELETE"):
        response = await api_client.request(method, ti_url(task="b"), headers=auth(token_secret, task="a"),
                                            json={"value": "a's"} if method == "PUT" else None)
        assert response.status_code == 403, method
        assert response.json()["code"] == "wrong_task_instance"
    clear = await api_client.delete(ti_url(task="b", key=None), headers=auth(token_secret, task="a"))
    assert clear.status_code == 403
    assert (await api_client.get(ti_url(task="b"), headers=auth(token_secret, task="b"))).json()["value"] == "b's"


async def test_mapped_index_1_cannot_read_index_0s_key(api_client: httpx.AsyncClient, token_secret: str) -> None:
    await api_client.put(ti_url(map_index=0), json={"value": "zero"}, headers=auth(token_secret, map_index=0))
    got = await api_client.get(ti_url(map_index=0), headers=auth(token_secret, map_index=1))
    assert got.status_code == 403 and got.json()["code"] == "wrong_task_instance"
    own = await api_client.get(ti_url(map_index=1), headers=auth(token_secret, map_index=1))
    assert own.status_code == 404


async def test_clear_without_all_map_indices_clears_only_the_callers_index(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine) -> None:
    for index in (0, 1, 2):
        for key in ("a", "b"):
            await api_client.put(ti_url(map_index=index, key=key), json={"value": key},
                                 headers=auth(token_secret, map_index=index))
    cleared = await api_client.delete(ti_url(map_index=1, key=None), headers=auth(token_secret, map_index=1))
    assert cleared.status_code == 200 and cleared.json() == {"deleted": 2}
    async with engine.connect() as conn:
        left = {i: len(await list_task_state(conn, TaskKey(DAG, RUN, TASK, i))) for i in (0, 1, 2)}
    assert left == {0: 2, 1: 0, 2: 2}


async def test_clear_with_all_map_indices_clears_every_index_of_the_task_only(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine) -> None:
    for index in (0, 1):
        await api_client.put(ti_url(map_index=index), json={"value": "x"}, headers=auth(token_secret, map_index=index))
    await api_client.put(ti_url(task="other"), json={"value": "keep"}, headers=auth(token_secret, task="other"))
    cleared = await api_client.delete(ti_url(map_index=1, key=None), params={"all_map_indices": "true"},
                                      headers=auth(token_secret, map_index=1))
    assert cleared.status_code == 200 and cleared.json() == {"deleted": 2}
    async with engine.connect() as conn:
        assert await list_task_state(conn, TaskKey(DAG, RUN, TASK, 0)) == []
        assert len(await list_task_state(conn, TaskKey(DAG, RUN, "other", -1))) == 1


async def test_unknown_request_fields_are_ignored_so_newer_clients_keep_working(api_client: httpx.AsyncClient,
                                                                                token_secret: str) -> None:
    put = await api_client.put(ti_url(), json={"value": "v", "ttl_seconds": 60}, headers=auth(token_secret))
    assert put.status_code == 200
