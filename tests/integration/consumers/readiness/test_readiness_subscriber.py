"""The readiness subscriber SDK against the real broker and database: typed signals, each run once, outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.readiness import DatabaseLedger, ReadinessSubscriber, RunStatus
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Scheduler
from assetbus.consumers.scheduler.publish import ReadinessPublisher, create_producer
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.runs import RunRow, get_run, list_runs
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
DAG = ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders"))
Handler = Callable[[ReadinessSignal], Awaitable[None]]


@pytest.fixture
async def emitter(infra: Settings, topics: Topics, token_secret: str, persister: Persister, engine: AsyncEngine,
                  scheduler: Scheduler, define_dags: Callable[..., Awaitable[object]]) -> AsyncIterator[AsyncEmitter]:
    """Emits `orders` through the persister; a scheduler fans it out to the `per_batch` DAG."""
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    await define_dags(DAG)
    token = task_token(token_secret, "ingest", "run-1", "load")
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as running:
        yield running


@pytest.fixture
def subscriber_for(infra: Settings, topics: Topics, db_url: str) -> Callable[[Handler], ReadinessSubscriber]:
    def make(handler: Handler) -> ReadinessSubscriber:
        return ReadinessSubscriber(infra.bootstrap_servers, "per_batch", handler, group_id=f"{topics.prefix}-workers",
                                   ledger=DatabaseLedger(db_url), topics=topics)

    return make


async def the_run(engine: AsyncEngine) -> RunRow:
    async def created() -> RunRow | None:
        async with engine.connect() as conn:
            runs = await list_runs(conn, dag_id="per_batch")
        return runs[0] if runs else None

    return await wait_for(created, what="the run")


async def status_of(engine: AsyncEngine, run_id: str) -> str:
    async with engine.connect() as conn:
        run = await get_run(conn, run_id)
    assert run is not None
    return run.status


async def republish(infra: Settings, topics: Topics, engine: AsyncEngine, run: RunRow) -> None:
    """What the scheduler does after a crash between its commit and the broker's ack: the same run again."""
    producer = create_producer(infra.kafka)
    await producer.start()
    try:
        await ReadinessPublisher(producer, engine, topics, ReadinessTopics(infra.kafka, topics)).publish(
            [run])
    finally:
        await producer.stop()


async def test_a_republished_signal_is_processed_once_even_after_a_restart(
        infra: Settings, topics: Topics, engine: AsyncEngine, emitter: AsyncEmitter,
        subscriber_for: Callable[[Handler], ReadinessSubscriber]) -> None:
    handled: list[ReadinessSignal] = []

    async def handle(signal: ReadinessSignal) -> None:
        handled.append(signal)

    async with subscriber_for(handle) as subscriber:
        receipt = await emitter.emit(ORDERS, partition_key="batch-41", dedupe_key="batch-41")
        run = await the_run(engine)
        await wait_for(lambda: _equals(subscriber.stats.processed, 1), what="the signal to be handled")
        await republish(infra, topics, engine, run)
        await wait_for(lambda: _equals(subscriber.stats.duplicates, 1), what="the repeat to be skipped")
    await republish(infra, topics, engine, run)
    async with subscriber_for(handle) as restarted:
        await wait_for(lambda: _equals(restarted.stats.duplicates, 1), what="the repeat after a restart")
    assert [s.run_id for s in handled] == [run.run_id]
    (signal,) = handled
    assert (signal.partition_key, signal.events[0].event_id) == ("batch-41", receipt.event_id)
    assert signal.events[0].source.dag_id == "ingest" and signal.events[0].source.task_id == "load"
    assert await status_of(engine, run.run_id) == RunStatus.SUCCESS


async def test_the_outcome_is_running_while_the_handler_runs_and_failed_when_it_raises(
        engine: AsyncEngine, emitter: AsyncEmitter, topics: Topics,
        subscriber_for: Callable[[Handler], ReadinessSubscriber]) -> None:
    release = asyncio.Event()

    async def handle(signal: ReadinessSignal) -> None:
        await release.wait()
        raise RuntimeError("downstream table is locked")

    async with subscriber_for(handle) as subscriber:
        await emitter.emit(ORDERS, partition_key="batch-42", dedupe_key="batch-42")
        run = await the_run(engine)
        await wait_for(lambda: _status_is(engine, run.run_id, RunStatus.RUNNING), what="status running")
        release.set()
        await wait_for(lambda: _status_is(engine, run.run_id, RunStatus.FAILED), what="status failed")
        assert subscriber.stats.failed == 1
    async with engine.connect() as conn:
        finished = await get_run(conn, run.run_id)
    assert finished is not None
    assert finished.detail == "RuntimeError: downstream table is locked"
    assert (finished.attempts, finished.consumer) == (1, f"{topics.prefix}-workers")


async def _equals(value: int, expected: int) -> bool:
    return value == expected


async def _status_is(engine: AsyncEngine, run_id: str, status: RunStatus) -> bool:
    return await status_of(engine, run_id) == status
