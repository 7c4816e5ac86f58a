"""`POST /execution/asset-events/emit` through Kafka and the running persister: receipts over HTTP."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.storage import count_events, register_asset
from assetbus.producers import dag_token, task_token
from tests.helpers import replaced, wait_for

URL = "/execution/asset-events/emit"
ORDERS = {"name": "orders", "uri": "s3://bucket/orders/"}


@pytest.fixture
async def orders(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS["name"], ORDERS["uri"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.usefixtures("orders", "persister")
async def test_http_emit_is_accepted_then_duplicate_with_the_original_event(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine) -> None:
    headers = bearer(task_token(token_secret, "ingest", "run-1", "load", try_number=1))
    body = {"asset": ORDERS, "extra": {"rows": 100}, "partition_key": "2026-10-01",
            "partition_date": "2026-10-01T00:00:00+00:00", "dedupe_key": "batch-41"}
    first = await api_client.post(URL, json=body, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "accepted" and first.json()["event_id"] is not None
    retry_headers = bearer(task_token(token_secret, "ingest", "run-1", "load", try_number=2))
    second = await api_client.post(URL, json=body, headers=retry_headers)
    assert second.status_code == 200 and second.json()["status"] == "duplicate"
    assert (second.json()["event_id"], second.json()["timestamp"]) == (first.json()["event_id"],
                                                                        first.json()["timestamp"])
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 1


@pytest.mark.usefixtures("orders", "persister")
async def test_provenance_comes_from_the_token_not_the_body(api_client: httpx.AsyncClient, token_secret: str,
                                                           engine: AsyncEngine) -> None:
    headers = bearer(task_token(token_secret, "ingest", "run-7", "load", map_index=3, try_number=2))
    body = {"asset": ORDERS, "source": {"kind": "task", "dag_id": "evil", "run_id": "x", "task_id": "y",
                                       "map_index": 0, "try_number": 1}}
    response = await api_client.post(URL, json=body, headers=headers)
    assert response.status_code == 200 and response.json()["status"] == "accepted"
    async with engine.connect() as conn:
        row = (await conn.execute(text("SELECT dag_id, run_id, task_id, map_index, try_number FROM asset_events")
                                  )).one()
    assert tuple(row) == ("ingest", "run-7", "load", 3, 2)


@pytest.mark.usefixtures("orders", "persister")
async def test_a_dag_run_token_emits_without_task_fields(api_client: httpx.AsyncClient, token_secret: str,
                                                        engine: AsyncEngine) -> None:
    response = await api_client.post(URL, json={"asset": ORDERS, "extra": {"why": "run failed"}},
                                     headers=bearer(dag_token(token_secret, "ingest", "run-1")))
    assert response.status_code == 200 and response.json()["status"] == "accepted"
    async with engine.connect() as conn:
        kind, task = (await conn.execute(text("SELECT source_kind, task_id FROM asset_events"))).one()
    assert (kind, task) == ("dag", None)


@pytest.mark.usefixtures("orders", "persister")
async def test_resending_the_same_command_id_is_answered_with_the_first_receipt_even_without_dedupe_key(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine) -> None:
    headers = bearer(task_token(token_secret, "ingest", "run-1", "load"))
    body = {"asset": ORDERS, "command_id": str(uuid.uuid4())}
    first = await api_client.post(URL, json=body, headers=headers)
    second = await api_client.post(URL, json=body, headers=headers)
    assert [first.json()["status"], second.json()["status"]] == ["accepted", "accepted"]
    assert first.json()["correlation_id"] == body["command_id"]
    assert second.json() == first.json()  # the same event id and time
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 1


@pytest.mark.usefixtures("orders", "persister")
@pytest.mark.parametrize(("change", "status", "code"), [
    ({"asset": {"name": "nope", "uri": "s3://nope/"}}, 404, "asset_not_found"),
    ({"asset": {"name": "orders", "uri": "s3://elsewhere/"}}, 404, "asset_not_found"),
    ({"partition_date": "2026-10-01T00:00:00+00:00"}, 422, "invalid_partition"),
    ({"partition_key": "p", "partition_date": "2026-10-01T00:00:00"}, 422, "invalid_partition"),
    ({"extra": {"blob": "x" * (70 * 1024)}}, 413, "extra_too_large"),
    ({"extra": {"nul": "a\u0000b"}}, 422, "invalid_command"),
])
async def test_a_rejected_emission_answers_the_receipts_error_code(
        api_client: httpx.AsyncClient, token_secret: str, engine: AsyncEngine, change: dict[str, object],
        status: int, code: str) -> None:
    response = await api_client.post(URL, json={"asset": ORDERS, **change},
                                     headers=bearer(task_token(token_secret, "ingest", "run-1", "load")))
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert response.json()["receipt"]["status"] == "rejected"
    async with engine.connect() as conn:
        assert await count_events(conn) == 0


async def test_malformed_emit_bodies_are_422_before_anything_is_sent(api_client: httpx.AsyncClient,
                                                                    token_secret: str) -> None:
    headers = bearer(task_token(token_secret, "ingest", "run-1", "load"))
    for body in ({}, {"asset": {"name": "orders"}}, {"asset": ORDERS, "extra": []},
                 {"asset": ORDERS, "partition_key": ""}, {"asset": ORDERS, "command_id": "not-a-uuid"}):
        response = await api_client.post(URL, json=body, headers=headers)
        assert response.status_code == 422, body
        assert response.json()["code"] == "invalid_request"


@pytest.fixture
async def impatient_api(api_config: ApiConfig) -> AsyncIterator[httpx.AsyncClient]:
    """The API with a 1 s receipt timeout (and no persister running)."""
    app: FastAPI = create_api(replaced(api_config, receipt_timeout_s=1.0))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://assetbus.test") as client:
        yield client


@pytest.mark.usefixtures("orders")
async def test_no_receipt_in_time_is_504_and_resending_the_command_id_later_stores_it_once(
        impatient_api: httpx.AsyncClient, token_secret: str, persister_config: PersisterConfig,
        engine: AsyncEngine) -> None:
    headers = bearer(task_token(token_secret, "ingest", "run-1", "load"))
    body = {"asset": ORDERS, "command_id": str(uuid.uuid4())}
    timed_out = await impatient_api.post(URL, json=body, headers=headers)
    assert timed_out.status_code == 504
    assert timed_out.json()["code"] == "receipt_timeout" and timed_out.json()["command_id"] == body["command_id"]

    async def answered() -> httpx.Response | None:
        response = await impatient_api.post(URL, json=body, headers=headers)
        return response if response.status_code != 504 else None

    async with Persister(persister_config):
        # the first command waited in Kafka and is stored now; the resend shares its command id, so
        # the answer is the first receipt that arrives for it, and every copy is answered alike
        again = await wait_for(answered, timeout_s=40, what="a receipt for the resent command")
    assert again.status_code == 200 and again.json()["status"] == "accepted"
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 1
