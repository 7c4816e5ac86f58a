"""The reply-topic subscriber: one per emitter process, resolving receipt futures by correlation id."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from schemas import Receipt

log = logging.getLogger("assetbus.receipts")


class ReceiptListener:
    """Reads the reply topic from its end (no consumer group) and hands each receipt to its waiter."""

    def __init__(self, bootstrap_servers: str, topic: str, producer_id: str) -> None:
        self._topic = topic
        self._producer_key = producer_id.encode()
        self._consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                                          group_id=None, fetch_max_wait_ms=20)
        self._waiters: dict[uuid.UUID, asyncio.Future[Receipt]] = {}
        self._task: asyncio.Task[None] | None = None
        self._paused = asyncio.Event()

    async def start(self) -> None:
        await self._consumer.start()
        # The consumer's partitions_for_topic() only knows subscribed topics; this one is assigned
        # manually, so ask the client to load its metadata first.
        await self._consumer._client.add_topic(self._topic)
        partitions = self._consumer._client.cluster.partitions_for_topic(self._topic)
        if not partitions:
            await self._consumer.stop()
            raise RuntimeError(f"reply topic {self._topic!r} does not exist; run `assetbus migrate` first")
        assigned = [TopicPartition(self._topic, p) for p in sorted(partitions)]
        self._consumer.assign(assigned)
        await self._consumer.seek_to_end(*assigned)
        for tp in assigned:  # fix the start position now, before any command is sent
            await self._consumer.position(tp)
        self._task = asyncio.create_task(self._run(), name="assetbus-receipts")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._consumer.stop()
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.cancel()
        self._waiters.clear()

    def expect(self, correlation_id: uuid.UUID) -> asyncio.Future[Receipt]:
        """The future for this command's receipt (the same one if already expected)."""
        waiter = self._waiters.get(correlation_id)
        if waiter is None or waiter.done():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters[correlation_id] = waiter
        return waiter

    def forget(self, correlation_id: uuid.UUID) -> None:
        self._waiters.pop(correlation_id, None)

    @property
    def pending(self) -> int:
        return len(self._waiters)

    def pause(self) -> None:
        """Stop resolving receipts (they are read and dropped). For tests of lost receipts."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    async def _run(self) -> None:
        while True:
            batches = await self._consumer.getmany(timeout_ms=200, max_records=5000)
            for records in batches.values():
                for record in records:
                    if record.key == self._producer_key and not self._paused.is_set():
                        self._resolve(record.value)

    def _resolve(self, value: bytes | None) -> None:
        try:
            receipt = Receipt.model_validate_json(value or b"")
        except ValidationError:
            log.warning("ignoring an unreadable receipt on %s", self._topic)
            return
        waiter = self._waiters.pop(receipt.correlation_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(receipt)
