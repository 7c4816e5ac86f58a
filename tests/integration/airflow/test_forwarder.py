"""The Airflow forwarder in real Airflow: every stored event becomes one Airflow asset event, in order, after a
kill -9 of the forwarder mid-stream and after a kill -9 and restart of Airflow's api-server mid-stream."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage.forwarded import claim_intent
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.forwarding import (
    airflow_asset_id,
    airflow_events,
    emit,
    ledger,
    metric,
    restart_api_server,
    start_forwarder,
    stored_ids,
    until,
)

FEED = AssetRef(name="forward.feed", uri="s3://forward/feed")
RESTART_FEED = AssetRef(name="forward.restart_feed", uri="s3://forward/restart_feed")


def _assert_exactly_once(events: list[dict[str, Any]], stored: list[int]) -> None:
    ours = [e["extra"]["assetbus"]["event_id"] for e in events]
    assert len(ours) == len(set(ours)), "an event was posted to Airflow twice"
    assert sorted(ours) == stored, "Airflow's events are not the stored events"
    assert ours == sorted(ours), "the asset's events reached Airflow out of order"
    first = events[0]
    assert first["partition_key"] == "k-0000"
    source = first["extra"]["assetbus"]["source"]
    assert (source["dag_id"], source["task_id"], source["map_index"], source["try_number"]) == \
        ("upstream_feed", "load", -1, 1)
    assert first["extra"]["rows"] == 7 and first["extra"]["assetbus"]["dedupe_key"]


async def _at_least(engine: AsyncEngine, asset: str, posted: int) -> bool:
    return (await ledger(engine, asset)).get("posted", 0) >= posted


async def test_kill_9_of_the_forwarder_mid_stream_posts_each_event_once(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    asset_id = await asyncio.to_thread(airflow_asset_id, airflow_api, airflow_stack, FEED, "forward_assets")
    count = 150
    await emit(airflow_stack, FEED, [f"k-{i:04d}" for i in range(count)], extra={"rows": 7})
    stored = await stored_ids(stack_engine, FEED.name)
    assert len(stored) == count

    group, port = start_forwarder(airflow_stack, "forwarder-kill", [FEED.name], killed=True)
    await until(lambda: _at_least(stack_engine, FEED.name, 20), 120, "the forwarder to post 20 events")
    airflow_stack.stop_service("forwarder-kill", signal.SIGKILL)
    at_kill = await ledger(stack_engine, FEED.name)
    assert at_kill.get("posted", 0) < count, f"the kill came after the stream ended: {at_kill}"

    start_forwarder(airflow_stack, "forwarder-kill", [FEED.name], group_id=group, port=port, killed=True)
    try:
        await until(lambda: _at_least(stack_engine, FEED.name, count), 240, "the ledger to confirm every event", 1.0)
        _assert_exactly_once(airflow_events(airflow_api, asset_id), stored)
        assert await ledger(stack_engine, FEED.name) == {"posted": count}
        ready = await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert metric(port, "assetbus_forwarder_consumer_lag") == 0
    finally:
        airflow_stack.stop_service("forwarder-kill")


async def test_an_airflow_api_server_restart_mid_stream_loses_and_doubles_nothing(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    asset_id = await asyncio.to_thread(airflow_asset_id, airflow_api, airflow_stack, RESTART_FEED, "forward_assets")
    count = 120
    await emit(airflow_stack, RESTART_FEED, [f"k-{i:04d}" for i in range(count)], extra={"rows": 7})
    stored = await stored_ids(stack_engine, RESTART_FEED.name)

    _, port = start_forwarder(airflow_stack, "forwarder-restart", [RESTART_FEED.name])
    try:
        await until(lambda: _at_least(stack_engine, RESTART_FEED.name, 10), 120, "the forwarder to post 10 events")
        await asyncio.to_thread(restart_api_server, airflow_stack)
        at_kill = await ledger(stack_engine, RESTART_FEED.name)
        assert at_kill.get("posted", 0) < count, f"the restart came after the stream ended: {at_kill}"
        await asyncio.to_thread(airflow_stack.airflow.wait_healthy, 180)
        airflow_api._http.headers["Authorization"] = f"Bearer {airflow_stack.airflow.token()}"
        await until(lambda: _at_least(stack_engine, RESTART_FEED.name, count), 240,
                    "the ledger to confirm every event", 1.0)
        _assert_exactly_once(airflow_events(airflow_api, asset_id), stored)
        assert metric(port, "assetbus_forwarder_airflow_errors_total", kind="unavailable") > 0, \
            "the forwarder never met the api-server down"
    finally:
        airflow_stack.stop_service("forwarder-restart")


INTENT_FEED = AssetRef(name="forward.intent_feed", uri="s3://forward/intent_feed")


async def test_intents_left_by_a_crash_are_resolved_by_searching_airflow(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    """The crash windows made on purpose: one intent whose POST reached Airflow (the forwarder died before
    confirming it), one whose POST never left. The first is found in Airflow, the second posted once."""
    asset_id = await asyncio.to_thread(airflow_asset_id, airflow_api, airflow_stack, INTENT_FEED, "forward_assets")
    await emit(airflow_stack, INTENT_FEED, ["k-0000", "k-0001", "k-0002"], extra={"rows": 7})
    reached, lost, fresh = await stored_ids(stack_engine, INTENT_FEED.name)
    async with stack_engine.begin() as conn:
        assert await claim_intent(conn, reached, asset_id) and await claim_intent(conn, lost, asset_id)
    posted = airflow_api._http.post("/assets/events", json={"asset_id": asset_id, "partition_key": "k-0000",
                                                             "extra": {"rows": 7, "assetbus": {"event_id": reached}}})
    posted.raise_for_status()

    _, port = start_forwarder(airflow_stack, "forwarder-intents", [INTENT_FEED.name])
    try:
        await until(lambda: _at_least(stack_engine, INTENT_FEED.name, 3), 120, "the ledger to confirm 3 events")
        ours = [e["extra"]["assetbus"]["event_id"] for e in airflow_events(airflow_api, asset_id)]
        assert ours == [reached, lost, fresh], "an intent was posted twice, or an event is missing"
        async with stack_engine.connect() as conn:
            found = (await conn.execute(text("SELECT airflow_event_id FROM airflow_forwarded WHERE event_id = :e"),
                                        {"e": reached})).scalar_one()
        assert found == posted.json()["id"]
        events = await asyncio.to_thread(metric, port, "assetbus_forwarder_events_total", outcome="found")
        assert events == 1
    finally:
        airflow_stack.stop_service("forwarder-intents")


AUTH_FEED = AssetRef(name="forward.auth_feed", uri="s3://forward/auth_feed")


async def _restart_airflow_api(stack: AirflowStack, api: AirflowApi, jwt_secret: str | None) -> None:
    await asyncio.to_thread(restart_api_server, stack, jwt_secret)
    await asyncio.to_thread(stack.airflow.wait_healthy, 180)
    api._http.headers["Authorization"] = f"Bearer {stack.airflow.token()}"


async def test_airflow_refusing_the_forwarders_token_mid_stream_loses_and_doubles_nothing(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    """Airflow's api-server comes back with another JWT secret: the token the forwarder holds is refused (401, or
    Airflow 3.3.2's 403 "Invalid JWT token"), it fetches a fresh one and goes on; then back to the first secret."""
    asset_id = await asyncio.to_thread(airflow_asset_id, airflow_api, airflow_stack, AUTH_FEED, "forward_assets")
    count = 80
    await emit(airflow_stack, AUTH_FEED, [f"k-{i:04d}" for i in range(count)], extra={"rows": 7})
    stored = await stored_ids(stack_engine, AUTH_FEED.name)
    start_forwarder(airflow_stack, "forwarder-auth", [AUTH_FEED.name])
    rotated = False
    try:
        await until(lambda: _at_least(stack_engine, AUTH_FEED.name, 5), 120, "the forwarder to post 5 events")
        old_token = airflow_stack.airflow.token()
        await _restart_airflow_api(airflow_stack, airflow_api, "rotated-" + airflow_stack.airflow.jwt_secret)
        rotated = True
        before = (await ledger(stack_engine, AUTH_FEED.name)).get("posted", 0)
        assert before < count, "the secret changed after the stream ended"
        refused = await asyncio.to_thread(httpx.get, f"{airflow_stack.airflow.url}/api/v2/assets/events",
                                          headers={"Authorization": f"Bearer {old_token}"}, timeout=30)
        # Airflow 3.3.2 answers 403 "Invalid JWT token" (not 401) to a token it cannot verify
        assert refused.status_code in (401, 403) and "token" in refused.text.lower(), refused.text
        await until(lambda: _at_least(stack_engine, AUTH_FEED.name, min(before + 5, count)), 120,
                    "the forwarder to post with a fresh token", 0.5)
        await _restart_airflow_api(airflow_stack, airflow_api, None)
        rotated = False
        await until(lambda: _at_least(stack_engine, AUTH_FEED.name, count), 240, "the ledger to confirm every event",
                    1.0)
        _assert_exactly_once(airflow_events(airflow_api, asset_id), stored)
    finally:
        airflow_stack.stop_service("forwarder-auth")
        if rotated:
            await _restart_airflow_api(airflow_stack, airflow_api, None)
