"""Offsets follow the database commit: a failure after the insert means redelivery, never loss."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.persister.batch import BatchResult
from assetbus.consumers.storage import count_events, register_asset
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka.types import KeyedRecord
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")


class FailsAfterInsertOnce(Persister):
    """Stores the first batch, then fails before publishing and before any offset commit."""

    failures = 0

    async def handle(self, records: Sequence[KeyedRecord]) -> BatchResult:
        if self.failures == 0:
            self.failures += 1
            # the DB transaction commits ...
            await self._store([], await self.processor.prepare(records), set())
            raise RuntimeError("injected: crash between the DB commit and the publish")
        return await super().handle(records)


async def committed_offsets(bootstrap: str, group: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(6)]
        total = 0
        for tp in parts:
            total += await consumer.committed(tp) or 0
        return total
    finally:
        await consumer.stop()


async def test_failure_after_insert_redelivers_and_answers_accepted_with_the_stored_event(
    infra: Settings, persister_config: PersisterConfig, topics: Topics, token_secret: str, engine: AsyncEngine
) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    token = task_token(token_secret, "ingest", "run-1", "load")
    failing = FailsAfterInsertOnce(persister_config)
    async with failing, AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as emitter:
        receipt = await emitter.emit(ORDERS, dedupe_key="batch-1")
        assert failing.failures == 1
    # the redelivered command found its own event stored: accepted with it, as the first delivery would have been
    assert receipt.accepted and receipt.event_id is not None
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 1
    committed = await committed_offsets(infra.bootstrap_servers, persister_config.group_id, topics.emissions)
    assert committed == 1


async def test_no_offset_is_committed_while_the_database_step_has_not_finished(
    infra: Settings, persister_config: PersisterConfig, topics: Topics, token_secret: str, engine: AsyncEngine
) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    token = task_token(token_secret, "ingest", "run-1", "load")
    never = FailsForever(persister_config)
    async with never, AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=1,
                                   attempts=1) as emitter:
        command = emitter.command(ORDERS, dedupe_key="batch-1")
        future = await emitter.submit(command)
        await wait_for(lambda: _at_least(never, 2), what="two failed attempts")
        assert not future.done() or future.exception() is not None
        assert await committed_offsets(infra.bootstrap_servers, persister_config.group_id, topics.emissions) == 0


class FailsForever(Persister):
    attempts = 0

    async def handle(self, records: Sequence[KeyedRecord]) -> BatchResult:
        self.attempts += 1
        raise RuntimeError("injected: every batch fails before the database step")


async def _at_least(persister: FailsForever, n: int) -> bool:
    return persister.attempts >= n
