"""Asset state routes: open only to tasks registered with the asset as inlet or outlet."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.task_assets import attach_task_asset, detach_task_asset
from assetbus.producers import dag_token, task_token

DAG, RUN = "ingest", "run-1"
VALUE_URL = "/execution/state/asset/value"
CLEAR_URL = "/execution/state/asset/clear"


def auth(secret: str, task: str, run_id: str = RUN) -> dict[str, str]:
    return {"Authorization": f"Bearer {task_token(secret, DAG, run_id, task)}"}


@pytest.fixture
async def registered(engine: AsyncEngine) -> None:
    """`orders` with `load` as its outlet and `report` as an inlet; `audit` is registered with nothing."""
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
        await register_asset(conn, "customers", "s3://bucket/customers/")
        await attach_task_asset(conn, DAG, "load", "orders", "outlet")
        await attach_task_asset(conn, DAG, "report", "orders", "inlet")


@pytest.mark.usefixtures("registered")
async def test_outlet_writes_a_watermark_and_an_inlet_reads_it(api_client: httpx.AsyncClient,
                                                              token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    put = await api_client.put(VALUE_URL, params=params, json={"value": "2026-10-01"},
                               headers=auth(token_secret, "load"))
    assert put.status_code == 200 and put.json()["version"] == 1
    got = await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "report"))
    assert got.status_code == 200 and got.json()["value"] == "2026-10-01" and got.headers["etag"] == '"1"'


@pytest.mark.usefixtures("registered")
async def test_asset_state_outlives_the_run_that_wrote_it(api_client: httpx.AsyncClient, token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    await api_client.put(VALUE_URL, params=params, json={"value": "41"}, headers=auth(token_secret, "load", "run-1"))
    got = await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "load", "run-2"))
    assert got.json()["value"] == "41"


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
    assert {r.json()["code"] for r in responses} == {"asset_not_registered"}
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
    assert got.status_code == 403 and got.json()["code"] == "asset_not_registered"


@pytest.mark.usefixtures("registered")
async def test_detaching_the_task_closes_the_asset_state_to_it(api_client: httpx.AsyncClient, token_secret: str,
                                                              engine: AsyncEngine) -> None:
    params = {"name": "orders", "key": "k"}
    assert (await api_client.put(VALUE_URL, params=params, json={"value": "1"},
                                 headers=auth(token_secret, "load"))).status_code == 200
    async with engine.begin() as conn:
        assert await detach_task_asset(conn, DAG, "load", "orders") == 1
    assert (await api_client.get(VALUE_URL, params=params, headers=auth(token_secret, "load"))).status_code == 403


@pytest.mark.usefixtures("registered")
async def test_a_dag_run_token_has_no_asset_state(api_client: httpx.AsyncClient, token_secret: str) -> None:
    token = dag_token(token_secret, DAG, RUN)
    got = await api_client.get(VALUE_URL, params={"name": "orders", "key": "k"},
                               headers={"Authorization": f"Bearer {token}"})
    assert got.status_code == 403 and got.json()["code"] == "not_a_task_token"


@pytest.mark.usefixtures("registered")
async def test_unknown_asset_key_is_404_and_delete_then_clear(api_client: httpx.AsyncClient,
                                                             token_secret: str) -> None:
    load = auth(token_secret, "load")
    missing = await api_client.get(VALUE_URL, params={"name": "orders", "key": "nothing"}, headers=load)
    assert missing.status_code == 404 and missing.json()["code"] == "key_not_found"
    for key in ("a", "b", "c"):
        await api_client.put(VALUE_URL, params={"name": "orders", "key": key}, json={"value": key}, headers=load)
    deleted = await api_client.delete(VALUE_URL, params={"name": "orders", "key": "a"}, headers=load)
    again = await api_client.delete(VALUE_URL, params={"name": "orders", "key": "a"}, headers=load)
    assert (deleted.status_code, again.status_code) == (204, 404)
    cleared = await api_client.delete(CLEAR_URL, params={"name": "orders"}, headers=load)
    assert cleared.status_code == 200 and cleared.json() == {"deleted": 2}


@pytest.mark.usefixtures("registered")
async def test_asset_compare_and_set_conflict_is_412(api_client: httpx.AsyncClient, token_secret: str) -> None:
    params = {"name": "orders", "key": "watermark"}
    load = auth(token_secret, "load")
    await api_client.put(VALUE_URL, params=params, json={"value": "1"}, headers=load)
    await api_client.put(VALUE_URL, params=params, json={"value": "2"}, headers=load)
    stale = await api_client.put(VALUE_URL, params=params, json={"value": "x"}, headers={**load, "If-Match": '"1"'})
    stale_delete = await api_client.delete(VALUE_URL, params=params, headers={**load, "If-Match": '"1"'})
    assert (stale.status_code, stale_delete.status_code) == (412, 412)
    assert stale.json()["current_version"] == 2


@pytest.mark.usefixtures("registered")
async def test_missing_or_malformed_query_parameters_are_422(api_client: httpx.AsyncClient,
                                                            token_secret: str) -> None:
    load = auth(token_secret, "load")
    no_key = await api_client.get(VALUE_URL, params={"name": "orders"}, headers=load)
    nul_name = await api_client.get(VALUE_URL, params={"name": "or\x00ders", "key": "k"}, headers=load)
    slash_key = await api_client.get(VALUE_URL, params={"name": "orders", "key": "a/b"}, headers=load)
    assert [r.status_code for r in (no_key, nul_name, slash_key)] == [422, 422, 422]
