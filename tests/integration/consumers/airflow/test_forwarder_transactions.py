"""The forwarder calls Airflow outside any transaction, against the real broker and database (Airflow faked).

While Airflow holds the forwarder's POST, the forwarder's database has no session in a transaction, no lock
on the ledger and no connection checked out of the forwarder's pool; the intent is leased instead. A second
forwarder (a rebalance) meeting the lease waits, posts nothing, and finds the event posted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow import AirflowAccount
from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.config import ForwarderConfig
from assetbus.consumers.airflow.forwarder import AirflowForwarder
from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import create_engine, register_asset
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetEvent, AssetRef, Topics
from assetbus.schemas.codecs import decode_event
from assetbus.settings import Settings
from tests.helpers import wait_for

FEED = AssetRef(name="forward.held", uri="s3://forward/held")
AIRFLOW_ASSET_ID = 41
AIRFLOW_EVENT_ID = 9001


class HeldAirflow:
    """Airflow's REST API as the forwarder uses it; each POST of an asset event waits until `release()`."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.posting = asyncio.Event()
        self._released = asyncio.Event()

    def release(self) -> None:
        self._released.set()

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path == "/api/v2/assets":
            return httpx.Response(200, json={"assets": [{"id": AIRFLOW_ASSET_ID, "name": FEED.name, "uri": FEED.uri}],
                                             "total_entries": 1})
        if request.method == "GET" and path == "/api/v2/assets/events":
            found = [{"id": AIRFLOW_EVENT_ID, "extra": post["extra"]} for post in self.posts]
            return httpx.Response(200, json={"asset_events": found, "total_entries": len(found)})
        if request.method == "POST" and path == "/api/v2/assets/events":
            self.posts.append(json.loads(request.content))
            self.posting.set()
            await self._released.wait()
            return httpx.Response(200, json={"id": AIRFLOW_EVENT_ID})
        return httpx.Response(404, json={"detail": f"no {request.method} {path} here"})


@pytest.fixture
async def stored(infra: Settings, topics: Topics, token_secret: str, persister: Persister,
                 engine: AsyncEngine) -> AssetEvent:
    """One event of FEED, stored by the persister, as the forwarder reads it from the asset-events topic."""
    async with engine.begin() as conn:
        await register_asset(conn, FEED.name, FEED.uri)
    token = task_token(token_secret, "upstream", "run-1", "load")
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as emitter:
        assert (await emitter.emit(FEED, partition_key="k-1")).accepted
    consumer = AIOKafkaConsumer(topics.asset_events, auto_offset_reset="earliest", enable_auto_commit=False,
                                **infra.kafka.client_kwargs("consumer"))
    await consumer.start()
    try:
        record = await asyncio.wait_for(consumer.getone(), 30)
    finally:
        await consumer.stop()
    return decode_event(record.value)


@pytest.fixture
async def forwarder_engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(db_url, pool_size=2)
    yield engine
    await engine.dispose()


def _forwarder(infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine,
               airflow: HeldAirflow) -> AirflowForwarder:
    account = AirflowAccount(url="http://airflow.test", token="jwt")
    config = ForwarderConfig(kafka=infra.kafka, database_url=db_url, topics=topics, airflow=account,
                             backoff_initial_s=0.1, backoff_max_s=0.5)
    client = AirflowClient(account, transport=httpx.MockTransport(airflow.handle))
    return AirflowForwarder(config, engine=engine, airflow=client)


async def _activity(engine: AsyncEngine) -> tuple[list[str], list[str]]:
    """The states of the other sessions on the forwarder's database, and the locks they hold on the ledger."""
    async with engine.connect() as conn:
        states = (await conn.execute(text(
            "SELECT coalesce(state, '') FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"))).scalars().all()
        locks = (await conn.execute(text(
            "SELECT l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE c.relname = 'airflow_forwarded' AND l.pid <> pg_backend_pid()"))).scalars().all()
    return list(states), list(locks)


async def test_no_transaction_lock_or_connection_is_held_while_airflow_takes_the_post(
        infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine, forwarder_engine: AsyncEngine,
        stored: AssetEvent) -> None:
    airflow = HeldAirflow()
    forwarder = _forwarder(infra, db_url, topics, forwarder_engine, airflow)
    other_engine = create_engine(db_url, pool_size=2)
    other = _forwarder(infra, db_url, topics, other_engine, airflow)
    posting = asyncio.create_task(forwarder.forward(stored))
    try:
        await asyncio.wait_for(airflow.posting.wait(), 30)
        assert forwarder_engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        states, locks = await _activity(engine)
        assert "idle in transaction" not in states and "active" not in states, states
        assert locks == []
        async with engine.connect() as conn:
            lease = (await conn.execute(text("SELECT state, lease_owner, lease_until > now() AS live "
                                             "FROM airflow_forwarded WHERE event_id = :e"),
                                        {"e": stored.event_id})).one()
        assert lease.state == "intent" and lease.lease_owner and lease.live  # leased, not locked

        meeting = asyncio.create_task(other.forward(stored))  # a rebalance: the same event, another forwarder
        await asyncio.sleep(1.5)  # it meets the lease, and waits
        assert not meeting.done() and len(airflow.posts) == 1
        airflow.release()
        assert await asyncio.wait_for(posting, 30) == "posted"
        assert await asyncio.wait_for(meeting, 30) == "existing"
    finally:
        airflow.release()
        for task in (posting,):
            if not task.done():
                task.cancel()
        await other_engine.dispose()
    assert len(airflow.posts) == 1 and airflow.posts[0]["extra"]["assetbus"]["event_id"] == stored.event_id

    async def posted() -> bool:
        async with engine.connect() as conn:
            row = (await conn.execute(text("SELECT state, airflow_event_id, lease_owner FROM airflow_forwarded "
                                           "WHERE event_id = :e"), {"e": stored.event_id})).one()
        return (row.state, row.airflow_event_id, row.lease_owner) == ("posted", AIRFLOW_EVENT_ID, None)

    await wait_for(posted, what="the ledger to record Airflow's event id")


async def test_the_events_of_an_asset_a_bridge_served_dag_waits_on_are_left_to_the_bridge(
        infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine, forwarder_engine: AsyncEngine,
        stored: AssetEvent) -> None:
    """The bridge starts that DAG's runs itself; forwarding the event too would make Airflow's scheduler start a
    second, asset-triggered run of it. Once no bridge-served DAG waits on the asset, its events go to Airflow."""
    from assetbus.consumers.airflow.declared import FILELOC_PREFIX
    from assetbus.consumers.scheduler import AssetWait, ConsumerDag
    from assetbus.consumers.storage.dags import deactivate_dags, upsert_dag

    dag = ConsumerDag(dag_id="served_by_the_bridge", schedule=AssetWait(FEED.name))
    async with engine.begin() as conn:
        await upsert_dag(conn, dag.dag_id, FILELOC_PREFIX + dag.dag_id, json.dumps(dag.definition()),
                         dag.fingerprint(), dag.coalesce)
    airflow = HeldAirflow()
    airflow.release()
    assert await _forwarder(infra, db_url, topics, forwarder_engine, airflow).forward(stored) == "bridge_served"
    assert airflow.posts == []
    async with engine.begin() as conn:
        await deactivate_dags(conn, [dag.dag_id])
    assert await _forwarder(infra, db_url, topics, forwarder_engine, airflow).forward(stored) == "posted"
    assert len(airflow.posts) == 1
