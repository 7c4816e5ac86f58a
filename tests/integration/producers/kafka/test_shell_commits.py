"""The shell commits a handled batch's offsets in the background, while the next batch is handled."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

RECORDS = 600


async def produce(settings: Settings, topic: str, n: int) -> None:
    producer = AIOKafkaProducer(**settings.kafka.client_kwargs())
    await producer.start()
    try:
        for i in range(n):
            await producer.send(topic, key=f"k{i % 12}".encode(), value=str(i).encode())
        await producer.flush()
    finally:
        await producer.stop()


class GatedCommits:
    """Wraps the real consumer's `commit`: each commit waits until the gate opens, then goes to the broker."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.real = consumer.commit
        self.gate = asyncio.Event()
        self.asked: list[dict[TopicPartition, int]] = []
        consumer.commit = self.commit

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.asked.append(dict(offsets))
        await self.gate.wait()
        await self.real(offsets)


def ends_of(batches: list[list[Any]]) -> dict[int, int]:
    """Per partition, the offset after the last record handled in `batches`."""
    ends: dict[int, int] = {}
    for batch in batches:
        for record in batch:
            ends[record.partition] = max(ends.get(record.partition, 0), record.offset + 1)
    return ends


async def committed_offsets(settings: Settings, topic: str, group_id: str) -> dict[int, int]:
    consumer = AIOKafkaConsumer(**settings.kafka.client_kwargs(), group_id=group_id, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        if not partitions:
            await consumer._client.force_metadata_update()
            partitions = consumer.partitions_for_topic(topic) or set()
        found = {p: await consumer.committed(TopicPartition(topic, p)) for p in sorted(partitions)}
        return {p: offset for p, offset in found.items() if offset is not None}
    finally:
        await consumer.stop()


async def test_the_next_batch_is_handled_while_the_previous_commit_is_in_flight(infra: Settings,
                                                                                topics: Topics) -> None:
    await produce(infra, topics.emissions, RECORDS)
    handled: list[list[Any]] = []

    async def handler(records: Sequence[Any]) -> None:
        handled.append(list(records))

    group = f"{topics.prefix}-shell"
    shell = ServiceShell(infra.kafka, ConsumerSettings(topics=(topics.emissions,), group_id=group, max_records=40,
                                                       fetch_max_wait_ms=10), handler)
    await shell.start()
    try:
        assert shell.consumer is not None
        gated = GatedCommits(shell.consumer)

        async def second_batch_handled_first_commit_held() -> bool:
            return len(handled) >= 2 and len(gated.asked) == 1 and shell.batches == 0

        await wait_for(second_batch_handled_first_commit_held, what="batch 2 handled while commit 1 is held")
        assert {tp.partition: offset for tp, offset in gated.asked[0].items()} == ends_of(handled[:1])
        gated.gate.set()

        async def all_handled_and_committed() -> bool:
            return sum(map(len, handled)) >= RECORDS and shell.batches == len(handled)

        await wait_for(all_handled_and_committed, what="every batch handled and committed")
    finally:
        await shell.stop()
    ends = ends_of(handled)
    assert sum(ends.values()) == RECORDS
    assert await committed_offsets(infra, topics.emissions, group) == ends


async def test_stop_waits_for_the_commit_in_flight(infra: Settings, topics: Topics) -> None:
    await produce(infra, topics.emissions, 30)
    handled: list[Any] = []

    async def handler(records: Sequence[Any]) -> None:
        handled.extend(records)

    group = f"{topics.prefix}-shell-stop"
    shell = ServiceShell(infra.kafka, ConsumerSettings(topics=(topics.emissions,), group_id=group, max_records=1000,
                                                       fetch_max_wait_ms=10), handler)
    await shell.start()
    assert shell.consumer is not None
    gated = GatedCommits(shell.consumer)

    async def every_record_handled_commits_held() -> bool:
        return len(handled) == 30 and bool(gated.asked)

    await wait_for(every_record_handled_commits_held, what="all 30 handled, their commit held")
    stopping = asyncio.create_task(shell.stop())
    finished, _ = await asyncio.wait({stopping}, timeout=0.3)  # stop() must not return before the commit
    assert not finished
    gated.gate.set()
    await asyncio.wait_for(stopping, 30)
    committed = await committed_offsets(infra, topics.emissions, group)
    assert sum(committed.values()) == 30
