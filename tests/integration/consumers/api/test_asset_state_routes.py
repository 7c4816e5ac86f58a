"""Asset state store routes (`/execution/store/asset/by-name|by-uri/…`): Airflow 3.3's contract, open only to
tasks registered with the asset as inlet or outlet, and the deprecated `/execution/state/asset/…` aliases."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.task_assets import attach_task_asset, detach_task_asset
from assetbus.producers import dag_token, task_token
from tests.helpers import statements_on

DAG, RUN = "ingest", "run-1"
BY_NAME = "/execution/store/asset/by-name"
BY_URI = "/execution/store/asset/by-uri"
VALUE_URL, CLEAR_URL = f"{BY_NAME}/value", f"{BY_NAME}/clear"
ORDERS_URI = "s3://bucket/orders/"


def auth(secret: str, task: str, run_id: str = RUN) -> dict[str, str]:
    return {"Authorization": f"Bearer {task_token(secret, DAG, run_id, task)}"}


def reason(response: httpx.Response) -> str:
    return str(response.json()["detail"]["reason"])


@pytest.fixture
async def registered(engine: AsyncEngine) -> None:
    """`orders` with `load` as its outlet and `report` as an inlet; `audit` is registered with nothing."""
    async with engine.begin() as conn:
        await register_asset(conn, "orders", ORDERS_URI)
        await register_asset(conn, "customers", "s3://bucket/customers/")
        await attach_task_asset(conn, DAG, "load", "orders", "outlet")
        await attach_task_asset(conn, DAG, "report", "orders", "inlet")


@pytest.mark.usefixtures("registered")
async def test_outlet_writes_a_watermark_and_an_inlet_reads_it(api_client: httpx.AsyncClient,
                                                              token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    put = await api_client.put(VALUE_URL, params=params, json={"value": {"day": "2026-10-01", "hour": 23}},
                               headers=auth(token_secret, "load"))
    assert put.status_code == 204 and put.headers["etag"] == '"1"'
    got = await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "report"))
    assert got.status_code == 200 and got.json() == {"value": {"day": "2026-10-01", "hour": 23}}
    assert got.headers["etag"] == '"1"'


@pytest.mark.usefixtures("registered")
async def test_by_uri_reaches_the_same_state_as_by_name(api_client: httpx.AsyncClient, token_secret: str) -> None:
    load = auth(token_secret, "load")
    put = await api_client.put(f"{BY_URI}/value", params={"uri": ORDERS_URI, "key": "w"}, json={"value": 41},
                               headers=load)
    got = await api_client.get(VALUE_URL, params={"name": "orders", "key": "w"}, headers=load)
    assert put.status_code == 204 and got.json() == {"value": 41}
    deleted = await api_client.delete(f"{BY_URI}/value", params={"uri": ORDERS_URI, "key": "w"}, headers=load)
    missing = await api_client.get(f"{BY_URI}/value", params={"uri": ORDERS_URI, "key": "w"}, headers=load)
    assert deleted.status_code == 204 and missing.status_code == 404 and reason(missing) == "not_found"
    await api_client.put(VALUE_URL, params={"name": "orders", "key": "x"}, json={"value": 1}, headers=load)
    cleared = await api_client.delete(f"{BY_URI}/clear", params={"uri": ORDERS_URI}, headers=load)
    assert cleared.status_code == 204 and cleared.headers["assetbus-deleted"] == "1"
    stranger = await api_client.get(f"{BY_URI}/value", params={"uri": ORDERS_URI, "key": "w"},
                                    headers=auth(token_secret, "audit"))
    assert stranger.status_code == 403 and reason(stranger) == "asset_not_registered"


@pytest.mark.usefixtures("registered")
async def test_asset_state_outlives_the_run_that_wrote_it(api_client: httpx.AsyncClient, token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    await api_client.put(VALUE_URL, params=params, json={"value": 41}, headers=auth(token_secret, "load", "run-1"))
    got = await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "load", "run-2"))
    assert got.json()["value"] == 41


@pytest.mark.usefixtures("registered")
async def test_asset_state_from_an_unregistered_task_is_403(api_client: httpx.AsyncClient,
                                                           token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    await api_client.put(VALUE_URL, params=params, json={"value": "41"}, headers=auth(token_secret, "load"))
    stranger = auth(token_secret, "audit")
    responses = [
        await api_client.get(VALUE_URL, params=params, headers=stranger),
        await api_client.put(VALUE_URL, params=params, json={"value": "0"}, headers=stranger),
        await api_client.delete(VALUE_URL, params=params, headers=stranger),
        await api_client.delete(CLEAR_URL, params={"name": "orders"}, headers=stranger),
    ]
    assert [r.status_code for r in responses] == [403] * 4
    assert {reason(r) for r in responses} == {"asset_not_registered"}
    got = await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "load"))
    assert got.json()["value"] == "41"


@pytest.mark.usefixtures("registered")
async def test_registration_with_one_asset_does_not_open_another(api_client: httpx.AsyncClient,
                                                                token_secret: str) -> None:
    got = await api_client.get(VALUE_URL, params={"name": "customers", "key": "k"}, headers=auth(token_secret, "load"))
    assert got.status_code == 403


@pytest.mark.usefixtures("registered")
async def test_unknown_asset_is_403_without_telling_whether_it_exists(api_client: httpx.AsyncClient,
                                                                     token_secret: str) -> None:
    got = await api_client.get(VALUE_URL, params={"name": "nope", "key": "k"}, headers=auth(token_secret, "load"))
    by_uri = await api_client.get(f"{BY_URI}/value", params={"uri": "s3://nope/", "key": "k"},
                                  headers=auth(token_secret, "load"))
    assert got.status_code == by_uri.status_code == 403 and reason(got) == "asset_not_registered"


@pytest.mark.usefixtures("registered")
async def test_detaching_the_task_closes_the_asset_state_to_it(api_client: httpx.AsyncClient, token_secret: str,
                                                              engine: AsyncEngine) -> None:
    params = {"name": "orders", "key": "k"}
    assert (await api_client.put(VALUE_URL, params=params, json={"value": "1"},
                                 headers=auth(token_secret, "load"))).status_code == 204
    async with engine.begin() as conn:
        assert await detach_task_asset(conn, DAG, "load", "orders") == 1
    assert (await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "load"))).status_code == 403


@pytest.mark.usefixtures("registered")
async def test_a_dag_run_token_has_no_asset_state(api_client: httpx.AsyncClient, token_secret: str) -> None:
    token = dag_token(token_secret, DAG, RUN)
    got = await api_client.get(VALUE_URL, params={"name": "orders", "key": "k"},
                               headers={"Authorization": f"Bearer {token}"})
    assert got.status_code == 403 and reason(got) == "not_a_task_token"


@pytest.mark.usefixtures("registered")
async def test_unknown_asset_key_is_404_and_delete_of_an_absent_key_is_204(api_client: httpx.AsyncClient,
                                                                          token_secret: str) -> None:
    load = auth(token_secret, "load")
    missing = await api_client.get(VALUE_URL, params={"name": "orders", "key": "nothing"}, headers=load)
    assert missing.status_code == 404 and reason(missing) == "not_found"
    for key in ("a", "b", "c"):
        await api_client.put(VALUE_URL, params={"name": "orders", "key": key}, json={"value": key}, headers=load)
    deleted = await api_client.delete(VALUE_URL, params={"name": "orders", "key": "a"}, headers=load)
    again = await api_client.delete(VALUE_URL, params={"name": "orders", "key": "a"}, headers=load)
    assert (deleted.status_code, again.status_code) == (204, 204)
    assert (deleted.headers["assetbus-deleted"], again.headers["assetbus-deleted"]) == ("1", "0")
    cleared = await api_client.delete(CLEAR_URL, params={"name": "orders"}, headers=load)
    assert cleared.status_code == 204 and cleared.headers["assetbus-deleted"] == "2"


@pytest.mark.usefixtures("registered")
async def test_asset_compare_and_set_conflict_is_412(api_client: httpx.AsyncClient, token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    load = auth(token_secret, "load")
    await api_client.put(VALUE_URL, params=params, json={"value": "1"}, headers=load)
    await api_client.put(VALUE_URL, params=params, json={"value": "2"}, headers=load)
    stale = await api_client.put(VALUE_URL, params=params, json={"value": "x"}, headers={**load, "If-Match": '"1"'})
    stale_delete = await api_client.delete(VALUE_URL, params=params, headers={**load, "If-Match": '"1"'})
    assert (stale.status_code, stale_delete.status_code) == (412, 412)
    assert stale.json()["detail"]["current_version"] == 2


@pytest.mark.usefixtures("registered")
async def test_asset_bodies_are_strict_and_take_no_expiry(api_client: httpx.AsyncClient, token_secret: str) -> None:
    load = auth(token_secret, "load")
    params = {"name": "orders", "key": "k"}
    expiry = await api_client.put(VALUE_URL, params=params, json={"value": 1, "expires_at": "2030-01-01T00:00:00Z"},
                                  headers=load)
    null = await api_client.put(VALUE_URL, params=params, json={"value": None}, headers=load)
    nan = await api_client.put(VALUE_URL, params=params, content=b'{"value": [NaN]}',
                               headers={**load, "Content-Type": "application/json"})
    assert [r.status_code for r in (expiry, null, nan)] == [422, 422, 422]
    assert {reason(r) for r in (expiry, null, nan)} == {"invalid_request"}


@pytest.mark.usefixtures("registered")
async def test_missing_or_malformed_query_parameters_are_422(api_client: httpx.AsyncClient,
                                                            token_secret: str) -> None:
    load = auth(token_secret, "load")
    no_key = await api_client.get(VALUE_URL, params={"name": "orders"}, headers=load)
    nul_name = await api_client.get(VALUE_URL, params={"name": "or\x00ders", "key": "k"}, headers=load)
    control_key = await api_client.get(VALUE_URL, params={"name": "orders", "key": "a\x01b"}, headers=load)
    dots_key = await api_client.get(VALUE_URL, params={"name": "orders", "key": "../"}, headers=load)
    no_uri = await api_client.get(f"{BY_URI}/value", params={"key": "k"}, headers=load)
    for response in (no_key, nul_name, control_key, dots_key, no_uri):
        assert response.status_code == 422 and reason(response) == "invalid_request"


@pytest.mark.usefixtures("registered")
async def test_the_deprecated_state_paths_are_aliases_of_the_by_name_routes(api_client: httpx.AsyncClient,
                                                                           token_secret: str) -> None:
    load = auth(token_secret, "load")
    put = await api_client.put("/execution/state/asset/value", params={"name": "orders", "key": "w"},
                               json={"value": [1, 2]}, headers=load)
    got = await api_client.get(VALUE_URL, params={"name": "orders", "key": "w"}, headers=load)
    cleared = await api_client.delete("/execution/state/asset/clear", params={"name": "orders"}, headers=load)
    assert put.status_code == 204 and got.json() == {"value": [1, 2]}
    assert cleared.status_code == 204 and cleared.headers["assetbus-deleted"] == "1"


@pytest.mark.usefixtures("registered")
async def test_asset_create_only_writes_once(api_client: httpx.AsyncClient, token_secret: str) -> None:
    params, load = {"name": "orders", "key": "w"}, {**auth(token_secret, "load"), "If-None-Match": "*"}
    first = await api_client.put(VALUE_URL, params=params, json={"value": 1}, headers=load)
    second = await api_client.put(VALUE_URL, params=params, json={"value": 2}, headers=load)
    assert (first.status_code, second.status_code) == (204, 412)
    assert second.json()["detail"]["current_version"] == 1


@pytest.mark.usefixtures("registered")
async def test_each_asset_state_request_is_one_sql_statement_registration_check_included(
        api_app: FastAPI, api_client: httpx.AsyncClient, token_secret: str) -> None:
    params, load = {"name": "orders", "key": "w"}, auth(token_secret, "load")
    async with statements_on(api_app.state.database.raw_pool) as statements:
        calls = [await api_client.put(VALUE_URL, params=params, json={"value": 1}, headers=load),
                 await api_client.get(VALUE_URL, params=params, headers=load),
                 await api_client.put(VALUE_URL, params=params, json={"value": 2},
                                      headers={**load, "If-Match": '"7"'}),
                 await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "audit")),
                 await api_client.delete(VALUE_URL, params=params, headers=load),
                 await api_client.delete(CLEAR_URL, params={"name": "orders"}, headers=load)]
    assert [c.status_code for c in calls] == [204, 200, 412, 403, 204, 204]
    assert calls[2].json()["detail"]["current_version"] == 1 and reason(calls[3]) == "asset_not_registered"
    assert len(statements) == len(calls), statements
