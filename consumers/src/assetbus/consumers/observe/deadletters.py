"""Dead letters: records the persister could not read as commands, with the reason in their headers.

Read straight from the dead-letter topic (no consumer group, nothing committed), so looking never
moves anything. The header names are the contract (`assetbus.schemas.deadletters`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas.deadletters import ERROR, REASON, SOURCE_OFFSET, SOURCE_PARTITION, SOURCE_TOPIC


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One record of the dead-letter topic."""

    topic: str
    partition: int
    offset: int
    timestamp: datetime
    key: bytes | None
    value: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return self.headers.get(REASON, "unknown")

    @property
    def error(self) -> str:
        return self.headers.get(ERROR, "")

    @property
    def source(self) -> str:
        """`topic:partition:offset` of the original record."""
        return ":".join(self.headers.get(h, "?") for h in (SOURCE_TOPIC, SOURCE_PARTITION, SOURCE_OFFSET))


def _letter(record: Any) -> DeadLetter:
    """From aiokafka's ConsumerRecord."""
    headers = {name: (raw or b"").decode("utf-8", "replace") for name, raw in record.headers or ()}
    return DeadLetter(record.topic, record.partition, record.offset,
                      datetime.fromtimestamp(record.timestamp / 1000, UTC), record.key, record.value or b"", headers)


async def _partitions(connection: KafkaConnection, topic: str) -> list[int]:
    """The topic's partition numbers (none when it does not exist)."""
    admin = AIOKafkaAdminClient(**connection.client_kwargs(), request_timeout_ms=15_000)
    try:
        await admin.start()
        [described] = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return sorted(p["partition"] for p in described["partitions"]) if described["error_code"] == 0 else []


async def _read(connection: KafkaConnection, topic: str, starts: dict[int, int] | None, limit: int,
                only: Sequence[int] | None = None) -> list[DeadLetter]:
    partitions = [TopicPartition(topic, p) for p in await _partitions(connection, topic)
                  if only is None or p in only]
    if not partitions:
        return []
    consumer = AIOKafkaConsumer(**connection.client_kwargs(), enable_auto_commit=False)
    try:
        await consumer.start()
        consumer.assign(partitions)
        ends = await consumer.end_offsets(partitions)
        firsts = await consumer.beginning_offsets(partitions)
        for tp in partitions:
            start = max(firsts[tp], (starts or {}).get(tp.partition, firsts[tp]))
            consumer.seek(tp, start)
        todo = {tp for tp in partitions if await consumer.position(tp) < ends[tp]}
        found: list[DeadLetter] = []
        while todo and len(found) < limit:
            batch = await consumer.getmany(*todo, timeout_ms=1000, max_records=limit - len(found))
            for tp, records in batch.items():
                found += [_letter(r) for r in records if r.offset < ends[tp]]
            todo = {tp for tp in todo if await consumer.position(tp) < ends[tp]}
        return sorted(found, key=lambda d: (d.timestamp, d.partition, d.offset))[:limit]
    finally:
        await consumer.stop()


async def read_dead_letters(connection: KafkaConnection, topic: str, *, limit: int = 100) -> list[DeadLetter]:
    """The oldest `limit` dead letters still retained on `topic`, oldest first."""
    return await _read(connection, topic, None, limit)


async def read_dead_letter(connection: KafkaConnection, topic: str, partition: int, offset: int) -> DeadLetter | None:
    """The dead letter at `partition`/`offset`, or None when there is none (never written, or expired)."""
    found = await _read(connection, topic, {partition: offset}, 1, only=[partition])
    return found[0] if found and found[0].offset == offset else None
