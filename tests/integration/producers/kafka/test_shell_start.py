"""The shell starts on topics the broker lists a moment later (a topic reaches a cluster's brokers one after
the other), and refuses at once, naming them, topics that never come."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka.errors import UnknownTopicOrPartitionError

from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.producers.kafka.topics import TopicCreator, TopicSpec
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics


async def nothing(records: object) -> None:
    del records


async def test_a_topic_created_while_the_shell_starts_is_subscribed(infra: Settings, topics: Topics) -> None:
    topic = f"{topics.prefix}.late-{uuid.uuid4().hex[:6]}"
    shell = ServiceShell(infra.kafka, ConsumerSettings(topics=(topic,), group_id=f"{topics.prefix}-late"), nothing)

    starting = asyncio.create_task(shell.start())
    try:
        await asyncio.sleep(1.0)  # the scenario: the topic comes a second after the start began
        assert not starting.done(), "the start did not wait for the topic"
        await TopicCreator(infra.kafka).ensure([TopicSpec(topic, partitions=2)])
        await starting
        await shell.wait_assigned()
        assert shell.consumer is not None and {tp.topic for tp in shell.consumer.assignment()} == {topic}
    finally:
        await shell.stop()
        await delete_topics(infra.kafka, [topic])


async def test_a_topic_that_never_comes_fails_the_start_within_its_wait(infra: Settings, topics: Topics) -> None:
    topic = f"{topics.prefix}.never"
    shell = ServiceShell(infra.kafka, ConsumerSettings(topics=(topics.emissions, topic), group_id="g",
                                                       topics_wait_s=1.0), nothing)
    started = time.monotonic()
    with pytest.raises(UnknownTopicOrPartitionError, match=f"subscribes to {topic}, which the broker has not listed"):
        await shell.start()
    assert time.monotonic() - started < 15  # aiokafka's own start retries for its 40 s request timeout
    assert shell.consumer is None
