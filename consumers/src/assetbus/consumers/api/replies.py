"""The API's own reply-topic reader: receipts keyed by this API instance, resolved by correlation id.

`consumers` may not import the emitter SDK, and FastStream's `request()` does not work on a real
broker, so this is a small aiokafka reader: every partition of the reply topic is assigned (no
consumer group, nothing committed) and read from the end as it was at start-up, before any
command is sent, so no receipt can slip past.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from assetbus.schemas import Receipt
from assetbus.schemas.codecs import decode_receipt

log = logging.getLogger("assetbus.api.replies")


class ReplyReader:
    """`with reader.awaiting(command_id) as receipt: send(...); await receipt`."""

    def __init__(self, bootstrap_servers: str, topic: str, key: str) -> None:
        self.topic = topic
        self.key = key
        self._key_bytes = key.encode()
        self._consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=None,
                                          enable_auto_commit=False, fetch_max_wait_ms=20)
        self._futures: dict[uuid.UUID, asyncio.Future[Receipt]] = {}
        self._holders: dict[uuid.UUID, int] = {}
        self._pump: asyncio.Task[None] | None = None

    async def start(self, partitions: set[int]) -> None:
        """Start reading `partitions` of the topic (the caller looked them up) from their current end."""
        if not partitions:
            raise RuntimeError(f"reply topic {self.topic!r} does not exist; run `assetbus migrate`")
        await self._consumer.start()
        try:
            assigned = [TopicPartition(self.topic, p) for p in sorted(partitions)]
            self._consumer.assign(assigned)
            await self._consumer.seek_to_end(*assigned)
            for tp in assigned:  # resolve the lazy "end" now, before the first command goes out
                await self._consumer.position(tp)
        except BaseException:
            await self._consumer.stop()
            raise
        self._pump = asyncio.create_task(self._read(), name="assetbus-api-replies")

    async def stop(self) -> None:
        try:
            if self._pump is not None:
                self._pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._pump
        finally:
            await self._consumer.stop()
            for future in self._futures.values():
                future.cancel()
            self._futures.clear()
            self._holders.clear()

    @contextlib.contextmanager
    def awaiting(self, correlation_id: uuid.UUID) -> Iterator[asyncio.Future[Receipt]]:
        """A future for the receipt answering `correlation_id`, forgotten when the block exits."""
        future = self._futures.get(correlation_id)
        if future is None or future.done():
            future = asyncio.get_running_loop().create_future()
            self._futures[correlation_id] = future
        self._holders[correlation_id] = self._holders.get(correlation_id, 0) + 1
        try:
            yield future
        finally:
            self._holders[correlation_id] -= 1
            if not self._holders[correlation_id]:  # the last request waiting for this command
                del self._holders[correlation_id]
                self._futures.pop(correlation_id, None)

    @property
    def waiting(self) -> int:
        return len(self._futures)

    async def _read(self) -> None:
        while True:
            fetched = await self._consumer.getmany(timeout_ms=500, max_records=1000)
            for records in fetched.values():
                for record in records:
                    if record.key == self._key_bytes:
                        self._deliver(record.value)

    def _deliver(self, value: bytes | None) -> None:
        try:
            receipt = decode_receipt(value)
        except ValidationError:
            log.warning("skipping an unreadable receipt on %s", self.topic)
            return
        future = self._futures.get(receipt.correlation_id)
        if future is not None and not future.done():
            future.set_result(receipt)
