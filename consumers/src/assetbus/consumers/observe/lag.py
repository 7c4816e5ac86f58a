"""Consumer-group lag: for each group, partition by partition, how far its committed offset is behind.

Lag = the partition's end offset (the next offset to be written) minus the group's committed offset;
a partition the group has never committed on counts from the partition's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from assetbus.producers.kafka import KafkaConnection


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One consumer group on one topic partition."""

    group: str
    topic: str
    partition: int
    committed: int | None
    """The group's committed offset (None: nothing committed yet)."""
    end: int
    """The partition's end offset: the offset the next record will get."""
    lag: int
    """Records written but not yet committed by the group."""


async def consumer_lag(connection: KafkaConnection, *, topic_prefix: str | None = None,
                       groups: Sequence[str] | None = None) -> list[PartitionLag]:
    """Lag of the named groups (default: every group), limited to topics under `topic_prefix.` if given.

    Sorted by group, topic and partition. Read-only: joins no group and commits nothing.
    """
    admin = AIOKafkaAdminClient(**connection.client_kwargs(), request_timeout_ms=15_000)
    try:
        await admin.start()
        names = list(groups) if groups is not None else sorted({g[0] for g in await admin.list_consumer_groups()})
        committed: dict[tuple[str, TopicPartition], int | None] = {}
        for group in names:
            for tp, meta in (await admin.list_consumer_group_offsets(group)).items():
                if topic_prefix is None or tp.topic.startswith(f"{topic_prefix}."):
                    committed[(group, tp)] = meta.offset if meta.offset >= 0 else None
    finally:
        await admin.close()
    if not committed:
        return []
    partitions = sorted({tp for _, tp in committed})
    consumer = AIOKafkaConsumer(**connection.client_kwargs(), enable_auto_commit=False)
    try:
        await consumer.start()
        ends = await consumer.end_offsets(partitions)
        starts = await consumer.beginning_offsets(partitions)
    finally:
        await consumer.stop()
    found = [PartitionLag(group, tp.topic, tp.partition, offset, ends[tp],
                          max(0, ends[tp] - (offset if offset is not None else starts[tp])))
             for (group, tp), offset in committed.items()]
    return sorted(found, key=lambda p: (p.group, p.topic, p.partition))
