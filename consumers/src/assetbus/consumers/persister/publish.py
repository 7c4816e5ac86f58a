"""Publishing a batch's outcome: receipts, asset events, dead letters; acknowledged before offsets move.

Records are packed into one record batch per topic-partition with aiokafka's `create_batch` /
`send_batch` (about 3x less CPU per record than `send()`), partitioned exactly like `send()` would
(murmur2 of the key), through one idempotent producer with acks=all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from assetbus.consumers.persister.batch import Outgoing
from assetbus.schemas.deadletters import TRUNCATED_FROM

DLQ_VALUE_LIMIT = 512 * 1024
"""A dead letter larger than this keeps only its first bytes (a header says so): it must still fit
the broker's message size limit, or it would block the batch behind it."""

_partitioner = DefaultPartitioner()


def create_producer(bootstrap_servers: str, *, linger_ms: int = 5) -> AIOKafkaProducer:
    """Idempotent, acks=all: a receipt or event the persister sent is on the log once per send."""
    return AIOKafkaProducer(bootstrap_servers=bootstrap_servers, enable_idempotence=True, acks="all",
                            linger_ms=linger_ms, max_batch_size=512 * 1024, compression_type=None)


def _fitting(record: Outgoing) -> Outgoing:
    if record.value is None or len(record.value) <= DLQ_VALUE_LIMIT:
        return record
    headers = (*record.headers, (TRUNCATED_FROM, str(len(record.value)).encode()))
    return Outgoing(record.topic, record.key, record.value[:DLQ_VALUE_LIMIT], headers)


class Publisher:
    """Sends records in per-partition batches; `publish` returns once the broker acknowledged them all."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer
        self._partitions: dict[tuple[str, bytes], int] = {}

    async def send(self, records: Iterable[Outgoing]) -> list[asyncio.Future[Any]]:
        """Hand the records to the producer; the futures resolve when the broker has them (or fail)."""
        builders: dict[tuple[str, int], Any] = {}
        pending: list[asyncio.Future[Any]] = []
        for record in records:
            if record.headers:
                record = _fitting(record)
            tp = (record.topic, await self._partition(record.topic, record.key))
            builder = builders.get(tp)
            if builder is None:
                builder = builders[tp] = self._producer.create_batch()
            if builder.append(key=record.key, value=record.value, timestamp=None, headers=list(record.headers)) \
                    is None:
                pending.append(await self._submit(builder, tp))
                builder = builders[tp] = self._producer.create_batch()
                builder.append(key=record.key, value=record.value, timestamp=None, headers=list(record.headers))
        for tp, builder in builders.items():
            pending.append(await self._submit(builder, tp))
        return pending

    async def publish(self, records: Iterable[Outgoing]) -> None:
        """Send, then wait for every acknowledgement (raises if one failed)."""
        await wait_all(await self.send(records))

    async def _submit(self, builder: Any, tp: tuple[str, int]) -> asyncio.Future[Any]:
        builder.close()
        future: asyncio.Future[Any] = await self._producer.send_batch(builder, tp[0], partition=tp[1])
        return future

    async def _partition(self, topic: str, key: bytes | None) -> int:
        if key is None:
            key = b""
        cached = self._partitions.get((topic, key))
        if cached is not None:
            return cached
        partitions = sorted(await self._producer.partitions_for(topic))
        partition: int = _partitioner(key, partitions, partitions)
        if len(self._partitions) > 10_000:
            self._partitions.clear()
        self._partitions[(topic, key)] = partition
        return partition

    def forget_partitions(self) -> None:
        """Topics may have grown partitions; look them up again."""
        self._partitions.clear()


async def wait_all(pending: list[asyncio.Future[Any]]) -> None:
    """Wait until every future has settled, then raise the first failure if there was one."""
    if not pending:
        return
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
