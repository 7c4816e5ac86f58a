"""Publishing receipts, events and dead letters: same partitions as `send()`, fitting sizes, known topics."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaProducer

from assetbus.consumers.persister import Outgoing
from assetbus.consumers.persister.app import DLQ_VALUE_LIMIT, ReplyTopics, fitting
from assetbus.producers.kafka.producer import create_producer
from assetbus.producers.kafka.sender import BatchSender, wait_all
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.integration.consumers.persister.streams import read_topic


@pytest.fixture
async def producer(infra: Settings) -> AsyncIterator[AIOKafkaProducer]:
    running = create_producer(infra.kafka)
    await running.start()
    yield running
    await running.stop()


async def test_records_land_on_the_partition_send_would_choose_for_their_key(
        infra: Settings, topics: Topics, producer: AIOKafkaProducer) -> None:
    keys = [f"asset-{i}".encode() for i in range(40)]
    records = fitting(Outgoing(topics.asset_events, key, b"batched") for key in keys)
    await wait_all(await BatchSender(producer).send(records))
    for key in keys:
        await producer.send(topics.receipts, b"sent", key=key)
    await producer.flush()
    batched = await read_topic(infra.bootstrap_servers, topics.asset_events, lambda r: len(r) == len(keys))
    sent = await read_topic(infra.bootstrap_servers, topics.receipts, lambda r: len(r) == len(keys))
    assert {r.key: r.partition for r in batched} == {r.key: r.partition for r in sent}
    assert len({r.partition for r in batched}) > 1


async def test_an_oversize_dead_letter_keeps_its_head_and_says_how_long_it_was(
        infra: Settings, topics: Topics, producer: AIOKafkaProducer) -> None:
    value = b"x" * (DLQ_VALUE_LIMIT + 100_000)
    await wait_all(await BatchSender(producer).send(fitting([Outgoing(topics.emissions_dlq, None, value,
                                                                      (("assetbus.dlq.reason", b"r"),))])))
    (letter,) = await read_topic(infra.bootstrap_servers, topics.emissions_dlq, lambda r: len(r) == 1)
    assert letter.value == value[:DLQ_VALUE_LIMIT]
    assert dict(letter.headers)["assetbus.dlq.truncated_from"] == str(len(value)).encode()


async def test_reply_topics_that_do_not_exist_are_reported_missing(topics: Topics,
                                                                   producer: AIOKafkaProducer) -> None:
    replies = ReplyTopics(producer)
    nowhere = f"{topics.prefix}.nowhere-{uuid.uuid4().hex[:8]}"
    assert await replies.missing({topics.receipts, nowhere}) == {nowhere}
    assert await replies.missing({topics.receipts}) == set()
