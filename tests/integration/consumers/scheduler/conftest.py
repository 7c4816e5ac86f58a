"""Scheduler scenarios: registered assets, a task emitter through the real persister, signal readers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.queue import pending_for_dag
from assetbus.consumers.storage.runs import RunRow, list_runs
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
CUSTOMERS = AssetRef(name="customers", uri="s3://bucket/customers/")
CLICKS = AssetRef(name="clicks", uri="s3://bucket/clicks/")


@pytest.fixture
async def assets(engine: AsyncEngine) -> list[AssetRef]:
    async with engine.begin() as conn:
        for asset in (ORDERS, CUSTOMERS, CLICKS):
            await register_asset(conn, asset.name, asset.uri)
    return [ORDERS, CUSTOMERS, CLICKS]


@pytest.fixture
async def emitter(infra: Settings, topics: Topics, token_secret: str, persister: Persister,
                  assets: list[AssetRef]) -> AsyncIterator[AsyncEmitter]:
    token = task_token(token_secret, "ingest", "run-1", "load")
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as running:
        yield running


@pytest.fixture
def runs_of(engine: AsyncEngine) -> Callable[[str], Awaitable[list[RunRow]]]:
    """`await runs_of(dag_id)`: the DAG's runs, oldest first."""

    async def read(dag_id: str) -> list[RunRow]:
        async with engine.connect() as conn:
            return list(reversed(await list_runs(conn, dag_id=dag_id, limit=10_000)))

    return read


@pytest.fixture
def wait_queued(engine: AsyncEngine) -> Callable[[str, int], Awaitable[None]]:
    """`await wait_queued(dag_id, n)`: the scheduler has queued n pending entries for the DAG."""

    async def wait(dag_id: str, count: int) -> None:
        async def queued() -> bool:
            async with engine.connect() as conn:
                return len(await pending_for_dag(conn, dag_id)) >= count

        await wait_for(queued, what=f"{count} queued entries for {dag_id}")

    return wait


@pytest.fixture
def read_signals(infra: Settings, topics: Topics) -> Callable[[str, int], Awaitable[list[ReadinessSignal]]]:
    """`await read_signals(dag_id, n)`: the DAG's readiness topic from the beginning, until n signals."""

    async def read(dag_id: str, count: int) -> list[ReadinessSignal]:
        return await signals_on(infra.bootstrap_servers, topics.readiness(dag_id), count)

    return read


async def signals_on(bootstrap: str, topic: str, count: int, timeout_s: float = 30) -> list[ReadinessSignal]:
    """Read a readiness topic from the beginning until `count` signals (all partitions, Kafka order in each)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await consumer.start()
    signals: list[ReadinessSignal] = []
    try:
        partitions = await consumer._client.fetch_all_metadata()
        assigned = [TopicPartition(topic, p) for p in sorted(partitions.partitions_for_topic(topic) or ())]
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)

        async def enough() -> bool:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                signals.extend(ReadinessSignal.model_validate_json(r.value) for r in records)
            return len(signals) >= count

        await wait_for(enough, timeout_s=timeout_s, what=f"{count} signals on {topic}")
        return signals
    finally:
        await consumer.stop()
