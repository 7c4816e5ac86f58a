"""The one reply-topic reader: receipts keyed by one client, resolved by correlation id.

The persister keys each receipt by the producer id of the command it answers, so a client reads
only the one partition its key hashes to, with no consumer group and nothing committed, from the
end as it was at start-up (fixed before any command is sent, so no receipt can slip past).
FastStream's `request()` does not work on a real broker, hence this small reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import TopicMissing
from assetbus.producers.kafka.longpoll import adapt_long_poll
from assetbus.producers.kafka.periodic import cancel_and_wait
from assetbus.producers.kafka.retry import RetryPolicy, RetryTimeout, retry_until
from assetbus.producers.kafka.sender import partition_for
from assetbus.schemas import Receipt
from assetbus.schemas.codecs import decode_receipt

__all__ = ["ReplyReader"]

log = logging.getLogger("assetbus.receipts")

QUIET_AFTER_S = 1.0
"""The reader long-polls once no receipt has been awaited or received for this long; before that it
polls every 20 ms, which keeps one client's receipt wait short."""


class ReplyReader:
    """Reads `topic` for receipts keyed `key`. Explicit lifecycle: `await start()`, `await stop()`.

    With `on_receipt`, every receipt for this key goes to it; otherwise each resolves the future
    `expect()`ed (or held by `awaiting()`) for its correlation id. `waiting` says whether a receipt is
    awaited (default: a future is); at rest the reader long-polls (`QUIET_AFTER_S`).
    """

    def __init__(self, connection: KafkaConnection, topic: str, key: str, *,
                 on_receipt: Callable[[Receipt], None] | None = None,
                 waiting: Callable[[], bool] | None = None) -> None:
        self.topic = topic
        self.key = key
        self._connection = connection
        self._key_bytes = key.encode()
        self._on_receipt = on_receipt
        self._consumer: AIOKafkaConsumer | None = None
        self._futures: dict[uuid.UUID, asyncio.Future[Receipt]] = {}
        self._holders: dict[uuid.UUID, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._waiting = waiting or (lambda: bool(self._futures))
        self._busy_at = time.monotonic()

    def _quiet(self) -> bool:
        if self._waiting():
            self._busy_at = time.monotonic()
            return False
        return time.monotonic() - self._busy_at > QUIET_AFTER_S

    async def start(self) -> None:
        consumer = AIOKafkaConsumer(**self._connection.client_kwargs("consumer"), enable_auto_commit=False,
                                    group_id=None, fetch_max_wait_ms=20)
        try:
            await consumer.start()  # a start that fails leaves the client's connections open too: stop() closes them
            partitions = await self._partitions(consumer)
            mine = TopicPartition(self.topic, partition_for(self._key_bytes, list(partitions)))
            consumer.assign([mine])
            await consumer.seek_to_end(mine)
            await consumer.position(mine)  # fix the start position now, before any command is sent
            adapt_long_poll(consumer, quiet=self._quiet)
        except BaseException:
            await consumer.stop()
            raise
        self._consumer = consumer
        self._task = asyncio.create_task(self._run(), name=f"assetbus-replies-{self.topic}")

    async def _partitions(self, consumer: AIOKafkaConsumer) -> set[int]:
        """The topic's partitions; a topic created a moment ago gets 5 s to show up."""
        # partitions_for_topic() only knows subscribed topics; this one is assigned by hand,
        # so ask the client to load its metadata first.
        client = consumer._client
        await client.add_topic(self.topic)

        async def look() -> set[int]:
            found: set[int] | None = client.cluster.partitions_for_topic(self.topic)
            if not found:
                await client.force_metadata_update()
                found = client.cluster.partitions_for_topic(self.topic)
            if not found:
                raise TopicMissing(self.topic, "reply topic")
            return found

        policy = RetryPolicy(initial_s=0.05, max_s=0.5, timeout_s=5.0)
        try:
            return await retry_until(look, policy, what=f"reply topic {self.topic!r}",
                                     retriable=lambda error: isinstance(error, TopicMissing))
        except RetryTimeout:
            raise TopicMissing(self.topic, "reply topic") from None

    async def stop(self) -> None:
        try:
            await cancel_and_wait(self._task)
            self._task = None
        finally:
            if self._consumer is not None:
                await self._consumer.stop()
                self._consumer = None
            for future in self._futures.values():
                if not future.done():
                    future.cancel()
            self._futures.clear()
            self._holders.clear()

    def expect(self, correlation_id: uuid.UUID) -> asyncio.Future[Receipt]:
        """The future for this command's receipt (the same one if already expected)."""
        future = self._futures.get(correlation_id)
        if future is None or future.done():
            future = asyncio.get_running_loop().create_future()
            self._futures[correlation_id] = future
        return future

    @contextlib.contextmanager
    def awaiting(self, correlation_id: uuid.UUID) -> Iterator[asyncio.Future[Receipt]]:
        """`expect()` for the block; forgotten when the last block waiting for this id exits."""
        future = self.expect(correlation_id)
        self._holders[correlation_id] = self._holders.get(correlation_id, 0) + 1
        try:
            yield future
        finally:
            self._holders[correlation_id] -= 1
            if not self._holders[correlation_id]:
                del self._holders[correlation_id]
                self._futures.pop(correlation_id, None)

    async def _run(self) -> None:
        assert self._consumer is not None
        key = self._key_bytes
        while True:
            batches = await self._consumer.getmany(timeout_ms=200, max_records=5000)
            for records in batches.values():
                for record in records:
                    if record.key == key:
                        self._resolve(record.value)

    def _resolve(self, value: bytes | None) -> None:
        self._busy_at = time.monotonic()
        try:
            receipt = decode_receipt(value)
        except ValidationError:
            log.warning("ignoring an unreadable receipt on %s", self.topic)
            return
        if self._on_receipt is not None:
            self._on_receipt(receipt)
            return
        if receipt.correlation_id in self._holders:  # `awaiting()` forgets it when its block exits
            future = self._futures.get(receipt.correlation_id)
        else:
            future = self._futures.pop(receipt.correlation_id, None)
        if future is not None and not future.done():
            future.set_result(receipt)
