"""The reply-topic subscriber: one per emitter process, resolving receipt futures by correlation id."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.partitioner import murmur2
from pydantic import ValidationError

from assetbus.producers.errors import EmitterError
from assetbus.schemas import Receipt
from assetbus.schemas.codecs import decode_receipt

log = logging.getLogger("assetbus.receipts")


def partition_for(key: bytes, partitions: list[int]) -> int:
    """The partition Kafka's default partitioner (murmur2, as in the Java client) puts `key` on."""
    ordered = sorted(partitions)
    index: int = (murmur2(key) & 0x7FFFFFFF) % len(ordered)
    return ordered[index]


class ReceiptListener:
    """Reads the reply topic from its end (no consumer group) and hands each receipt to its waiter.

    Receipts are keyed by producer id, so only the one partition that key hashes to is read: an
    emitter process does not parse the receipts of every other emitter.
    """

    def __init__(self, bootstrap_servers: str, topic: str, producer_id: str, *,
                 on_receipt: Callable[[Receipt], None] | None = None) -> None:
        """With `on_receipt`, every receipt for this producer goes to it; otherwise to `expect()`ed futures."""
        self._on_receipt = on_receipt
        self._bootstrap = bootstrap_servers
        self._topic = topic
        self._producer_key = producer_id.encode()
        self._consumer: AIOKafkaConsumer | None = None
        self._waiters: dict[uuid.UUID, asyncio.Future[Receipt]] = {}
        self._task: asyncio.Task[None] | None = None
        self._paused = False
        self.received = 0
        """Receipts for this producer read from the topic (dropped ones included)."""
        self.dropped = 0
        """Receipts read while paused and thrown away."""

    async def start(self) -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=self._bootstrap, enable_auto_commit=False, group_id=None,
                                    fetch_max_wait_ms=20)
        await consumer.start()
        try:
            # partitions_for_topic() only knows subscribed topics; this one is assigned by hand,
            # so ask the client to load its metadata first.
            await consumer._client.add_topic(self._topic)
            partitions = consumer._client.cluster.partitions_for_topic(self._topic)
            if not partitions:
                raise EmitterError(f"reply topic {self._topic!r} does not exist; run `assetbus migrate` first")
            mine = TopicPartition(self._topic, partition_for(self._producer_key, list(partitions)))
            consumer.assign([mine])
            await consumer.seek_to_end(mine)
            await consumer.position(mine)  # fix the start position now, before any command is sent
        except BaseException:
            await consumer.stop()
            raise
        self._consumer = consumer
        self._task = asyncio.create_task(self._run(), name="assetbus-receipts")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
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
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    async def _run(self) -> None:
        assert self._consumer is not None
        key = self._producer_key
        while True:
            batches = await self._consumer.getmany(timeout_ms=200, max_records=5000)
            for records in batches.values():
                for record in records:
                    if record.key != key:
                        continue
                    self.received += 1
                    if self._paused:
                        self.dropped += 1
                    else:
                        self._resolve(record.value)

    def _resolve(self, value: bytes | None) -> None:
        try:
            receipt = decode_receipt(value)
        except ValidationError:
            log.warning("ignoring an unreadable receipt on %s", self._topic)
            return
        if self._on_receipt is not None:
            self._on_receipt(receipt)
            return
        waiter = self._waiters.pop(receipt.correlation_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(receipt)
