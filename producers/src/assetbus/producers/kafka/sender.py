"""The one batched record sender: records packed into one record batch per topic-partition.

It uses the producer's batch API (`create_batch` / `send_batch`) instead of `producer.send()`:
`send()` is one coroutine per record and costs about three times more CPU per record than appending
to a batch. Records go to the partition Kafka's default partitioner (murmur2 of the key, as in the
Java client) picks, so keyed order is the same as with `send()`.

Given a `RenewableProducer`, the sender watches every batch it hands over; a refused one makes the next
`send_open` start a new producer first, and if that start fails, the open batches are dropped (the owner puts
them again) and the error raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import murmur2

from assetbus.producers.kafka.renewal import RenewableProducer

__all__ = ["BatchSender", "Delivery", "Refused", "partition_for", "wait_all"]

Header = tuple[str, bytes]
Refused = Callable[[list[Any], BaseException], None]
"""Called with the tags of a batch the producer would not take, and why."""


def partition_for(key: bytes, partitions: Sequence[int]) -> int:
    """The partition Kafka's default partitioner (murmur2, as in the Java client) puts `key` on."""
    ordered = sorted(partitions)
    index: int = (murmur2(key) & 0x7FFFFFFF) % len(ordered)
    return ordered[index]


@dataclass(slots=True, eq=False)
class Delivery:
    """One record batch handed to the producer: `future` resolves when the broker acknowledged it."""

    future: asyncio.Future[Any]
    records: int
    tags: list[Any]


@dataclass(slots=True, eq=False)
class _Open:
    builder: Any
    records: int = 0
    tags: list[Any] = field(default_factory=list)


class BatchSender:
    """`put()` records (synchronous, cheap), then `await send_open()` to hand every batch to Kafka.

    Not safe for two tasks to interleave `put` and `send_open` on; the owners serialise them.
    """

    def __init__(self, producer: AIOKafkaProducer | RenewableProducer, *, max_partition_cache: int = 10_000) -> None:
        self._source = producer
        self._renewable = producer if isinstance(producer, RenewableProducer) else None
        self._partition_lists: dict[str, list[int]] = {}
        self._partitions: dict[tuple[str, bytes], int] = {}
        self._max_cache = max_partition_cache
        self._open: dict[tuple[str, int], _Open] = {}
        self._full: list[tuple[tuple[str, int], _Open]] = []
        self.batches_sent = 0
        self.records_sent = 0

    @property
    def _producer(self) -> AIOKafkaProducer:
        """The producer to send with now (a renewable one's current producer)."""
        source = self._source
        return source.producer if isinstance(source, RenewableProducer) else source

    def know_partitions(self, topic: str, partitions: Iterable[int]) -> None:
        """Tell the sender a topic's partitions (so `partition_of` needs no metadata round trip)."""
        self._partition_lists[topic] = sorted(partitions)

    async def partition_of(self, topic: str, key: bytes | None) -> int:
        """The partition of `key` on `topic` (the partition list is looked up once per topic)."""
        key = key or b""
        found = self._partitions.get((topic, key))
        if found is not None:  # the hot path: no more work than this per record
            return found
        if topic not in self._partition_lists:
            self.know_partitions(topic, await self._producer.partitions_for(topic))
        return self.partition_known(topic, key)

    def partition_known(self, topic: str, key: bytes) -> int:
        """`partition_of` for a topic given to `know_partitions` (no await)."""
        found = self._partitions.get((topic, key))
        if found is None:
            found = partition_for(key, self._partition_lists[topic])
            if len(self._partitions) >= self._max_cache:
                self._partitions.clear()
            self._partitions[(topic, key)] = found
        return found

    @property
    def has_full_batches(self) -> bool:
        return bool(self._full)

    def put(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
            headers: Sequence[Header] = (), tag: Any = None) -> None:
        """Append one record to the open batch of its partition; `tag` travels with the batch's `Delivery`."""
        tp = (topic, partition)
        batch = self._open.get(tp)
        if batch is None:
            batch = self._open[tp] = _Open(self._producer.create_batch())
        if batch.builder.append(key=key, value=value, timestamp=None, headers=list(headers)) is None:
            self._full.append((tp, batch))
            batch = self._open[tp] = _Open(self._producer.create_batch())
            batch.builder.append(key=key, value=value, timestamp=None, headers=list(headers))  # the first always fits
        batch.records += 1
        if tag is not None:
            batch.tags.append(tag)

    async def send_open(self, on_refused: Refused | None = None) -> list[Delivery]:
        """Hand every full and open batch to the producer, in the order they were filled.

        A batch the producer refuses (it is closed, or no room came before its timeout) raises, unless
        `on_refused` is given: then it gets the batch's tags and the error, and the next batch goes on.
        """
        if self._renewable is not None and self._renewable.broken:
            try:
                await self._renewable.renewed()
            except BaseException:
                self.discard_open()
                raise
        batches, self._full = self._full, []
        batches.extend(self._open.items())
        self._open.clear()
        deliveries: list[Delivery] = []
        for (topic, partition), batch in batches:
            batch.builder.close()
            try:
                future = await self._producer.send_batch(batch.builder, topic, partition=partition)
            except Exception as error:
                if on_refused is None:
                    raise
                on_refused(batch.tags, error)
                continue
            if self._renewable is not None:
                self._renewable.watch(future)
            self.batches_sent += 1
            self.records_sent += batch.records
            deliveries.append(Delivery(future, batch.records, batch.tags))
        return deliveries

    def discard_open(self) -> None:
        """Drop what was put and not handed over (a caller that failed half-way and will put it all again)."""
        self._open.clear()
        self._full.clear()

    async def send(self, records: Iterable[tuple[str, bytes | None, bytes | None, Sequence[Header]]]) -> list[Delivery]:
        """Partition, pack and hand over `(topic, key, value, headers)` records; wait with `wait_all`."""
        cache = self._partitions
        for topic, key, value, headers in records:
            partition = cache.get((topic, key or b""))
            if partition is None:
                partition = await self.partition_of(topic, key)
            self.put(topic, partition, key, value, headers)
        return await self.send_open()


async def wait_all(pending: Iterable[Delivery | asyncio.Future[Any]]) -> None:
    """Wait until every delivery has settled, then raise the first failure if there was one."""
    futures = [p.future if isinstance(p, Delivery) else p for p in pending]
    if not futures:
        return
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
