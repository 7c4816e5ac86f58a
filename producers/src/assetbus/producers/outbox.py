"""The outbox: packs records into one open batch per partition and hands batches to aiokafka.

It uses the producer's batch API (`create_batch` / `send_batch`) instead of `producer.send()`:
`send()` is one coroutine per record and costs several times more CPU per record than appending
to a batch. One sender task hands over whatever is open after `linger`; while aiokafka still
has a batch in flight for a partition, new records keep filling the next one, so batches grow
with the load. Records go to the partition Kafka's default partitioner picks for their key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer

from assetbus.producers.receipts import partition_for

log = logging.getLogger("assetbus.emitter")

DeliveryFailed = Callable[[Sequence[Any], BaseException], None]


class _Batch:
    __slots__ = ("builder", "tags")

    def __init__(self, builder: Any) -> None:
        self.builder = builder
        self.tags: list[Any] = []


class Outbox:
    """Batches for one topic. `put()` is synchronous and cheap; `flush()` waits for the broker."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, partitions: list[int], *, linger_s: float,
                 on_failure: DeliveryFailed) -> None:
        self._producer = producer
        self._topic = topic
        self._partitions = sorted(partitions)
        self._linger_s = linger_s
        self._on_failure = on_failure
        self._partition_of: dict[bytes, int] = {}
        self._open: dict[int, _Batch] = {}
        self._full: list[tuple[int, _Batch]] = []
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.batches_sent = 0
        self.records_sent = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="assetbus-outbox")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def has_full_batches(self) -> bool:
        return bool(self._full)

    def put(self, key: bytes, value: bytes, tag: Any) -> None:
        """Append one record; `tag` is handed to `on_failure` if its batch cannot be delivered."""
        partition = self._partition_of.get(key)
        if partition is None:
            partition = self._partition_of[key] = partition_for(key, self._partitions)
        batch = self._open.get(partition)
        if batch is None:
            batch = self._open[partition] = _Batch(self._producer.create_batch())
        if batch.builder.append(key=key, value=value, timestamp=None) is None:
            self._full.append((partition, batch))
            batch = self._open[partition] = _Batch(self._producer.create_batch())
            if batch.builder.append(key=key, value=value, timestamp=None) is None:
                raise ValueError(f"a record of {len(value)} bytes does not fit in an empty batch")
        batch.tags.append(tag)
        self._wake.set()

    async def flush(self) -> None:
        """Hand over everything open now and wait until the broker acknowledged every batch."""
        await self._send_all()
        if self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._linger_s and not self._full:
                await asyncio.sleep(self._linger_s)
            await self._send_all()

    async def _send_all(self) -> None:
        async with self._lock:
            batches, self._full = self._full, []
            batches.extend(self._open.items())
            self._open.clear()
            for partition, batch in batches:
                await self._send(partition, batch)

    async def _send(self, partition: int, batch: _Batch) -> None:
        try:
            delivery = await self._producer.send_batch(batch.builder, self._topic, partition=partition)
        except Exception as error:  # the producer is closed or timed out waiting for room
            log.warning("could not hand a batch of %d to Kafka: %s", len(batch.tags), error)
            self._on_failure(batch.tags, error)
            return
        self.batches_sent += 1
        self.records_sent += len(batch.tags)
        self._in_flight.add(delivery)
        delivery.add_done_callback(lambda done: self._delivered(done, batch.tags))

    def _delivered(self, done: asyncio.Future[Any], tags: list[Any]) -> None:
        self._in_flight.discard(done)
        error = None if done.cancelled() else done.exception()
        if done.cancelled() or error is not None:
            log.warning("Kafka did not take a batch of %d: %s", len(tags), error or "cancelled")
            self._on_failure(tags, error or asyncio.CancelledError())
