"""The batched sender: records packed per topic-partition, partitioned like Kafka's default partitioner."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from assetbus.producers.kafka import BatchSender, Delivery, KafkaConnection, create_producer, partition_for


class RecordingProducer:
    """`create_batch` from a real (never started) aiokafka producer; `send_batch` recorded."""

    def __init__(self, real: AIOKafkaProducer, refuse: set[tuple[str, int]] | None = None) -> None:
        self._real = real
        self.refuse = refuse or set()
        self.sent: list[tuple[str, int, int]] = []

    def create_batch(self) -> Any:
        return self._real.create_batch()

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
        if (topic, partition) in self.refuse:
            raise RuntimeError("producer closed")
        self.sent.append((topic, partition, batch.record_count()))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    async def partitions_for(self, topic: str) -> set[int]:
        return {0, 1, 2}


def test_partition_for_is_kafkas_default_partitioner() -> None:
    partitioner = DefaultPartitioner()
    for key in (b"orders", b"clicks", b"", b"\xff\x00", "ünïcode".encode()):
        assert partition_for(key, [2, 0, 1]) == partitioner(key, [0, 1, 2], [0, 1, 2])


async def test_records_are_packed_one_batch_per_partition_and_sent_in_order() -> None:
    producer = RecordingProducer(create_producer(KafkaConnection(), max_batch_bytes=1024))
    sender = BatchSender(producer)
    records = [("t", f"key-{i % 3}".encode(), b"x" * 100, ()) for i in range(30)]
    deliveries = await sender.send(records)
    assert sum(d.records for d in deliveries) == 30 == sender.records_sent
    per_partition: dict[int, int] = {}
    for topic, partition, count in producer.sent:
        assert topic == "t"
        per_partition[partition] = per_partition.get(partition, 0) + count
    expected: dict[int, int] = {}
    for _, key, _, _ in records:
        p = partition_for(key, [0, 1, 2])
        expected[p] = expected.get(p, 0) + 1
    assert per_partition == expected
    assert len(producer.sent) > len(expected), "1 KiB batches: full ones were handed over and new ones opened"


async def test_a_refused_batch_hands_its_tags_back_and_the_next_goes_on() -> None:
    producer = RecordingProducer(create_producer(KafkaConnection()), refuse={("t", 0)})
    sender = BatchSender(producer)
    sender.know_partitions("t", [0, 1])
    sender.put("t", 0, b"a", b"1", (), tag="first")
    sender.put("t", 1, b"b", b"2", (), tag="second")
    refused: list[tuple[list[Any], BaseException]] = []
    deliveries = await sender.send_open(on_refused=lambda tags, error: refused.append((tags, error)))
    assert [tags for tags, _ in refused] == [["first"]]
    assert [d.tags for d in deliveries] == [["second"]]
    assert all(isinstance(d, Delivery) for d in deliveries)


async def test_the_producer_factory_is_idempotent_with_acks_all() -> None:
    producer = create_producer(KafkaConnection(bootstrap_servers=("a:1", "b:2")), linger_ms=7)
    assert producer._txn_manager is not None, "idempotence on"
    assert producer._sender._acks == -1, "acks=all"
    assert producer.client._bootstrap_servers == ["a:1", "b:2"]
    assert producer._message_accumulator._linger_time == 0.007
