"""Lag and dead letters as the broker has them: what `/ui`, `/metrics` and the CLI show."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from assetbus.consumers.observe import DeadLetterRecord, consumer_group_lag, read_dead_letters
from assetbus.consumers.persister import Persister
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for


async def test_a_group_that_committed_nothing_new_lags_by_what_was_written(infra: Settings, topics: Topics) -> None:
    connection = KafkaConnection(bootstrap_servers=infra.bootstrap_servers)
    tp = TopicPartition(topics.asset_events, 2)
    group = f"{topics.prefix}-lag-probe"
    consumer = AIOKafkaConsumer(bootstrap_servers=infra.bootstrap_servers, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.commit({tp: 0})
    finally:
        await consumer.stop()
    producer = AIOKafkaProducer(bootstrap_servers=infra.bootstrap_servers)
    await producer.start()
    try:
        for n in range(5):
            await producer.send_and_wait(topics.asset_events, b"{}", partition=2, key=str(n).encode())
    finally:
        await producer.stop()

    lag = await consumer_group_lag(connection, topic_prefix=topics.prefix)

    assert [(g.group_id, g.lag, g.by_topic()) for g in lag] == [(group, 5, {topics.asset_events: 5})]
    assert [(p.partition, p.committed, p.end) for p in lag[0].partitions] == [(2, 0, 5)]


async def test_an_unreadable_emission_is_read_back_with_its_reason(infra: Settings, topics: Topics,
                                                                   persister: Persister) -> None:
    connection = KafkaConnection(bootstrap_servers=infra.bootstrap_servers)
    assert await read_dead_letters(connection, topics.emissions_dlq) == []
    producer = AIOKafkaProducer(bootstrap_servers=infra.bootstrap_servers)
    await producer.start()
    try:
        sent = await producer.send_and_wait(topics.emissions, b"[1, 2", key=b"orders")
    finally:
        await producer.stop()

    async def dead() -> list[DeadLetterRecord]:
        return await read_dead_letters(connection, topics.emissions_dlq)

    [letter] = await wait_for(dead, what="the dead letter")
    assert (letter.reason, letter.key, letter.value_preview) == ("not_json", "orders", "[1, 2")
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
        topics.emissions, sent.partition, sent.offset)
    assert letter.error.startswith("value is not JSON")
    groups = await consumer_group_lag(connection, topic_prefix=topics.prefix)
    assert any(g.group_id == f"{topics.prefix}-persister" and topics.emissions in g.by_topic() for g in groups)


async def test_an_absent_dead_letter_topic_reads_as_empty(infra: Settings) -> None:
    connection = KafkaConnection(bootstrap_servers=infra.bootstrap_servers)
    assert await read_dead_letters(connection, "assetbus-never-created.emissions.dlq") == []
