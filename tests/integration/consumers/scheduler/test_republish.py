"""After a crash between the broker's ack and the `published` mark, the next start finds those signals on the
broker and only marks their runs: re-sends are bounded to the runs whose signal is not there."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AssetWait, ConsumerDag
from assetbus.consumers.scheduler.payload import signal_json
from assetbus.consumers.scheduler.publish import ReadinessPublisher
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage.fanout import write_fanout
from assetbus.consumers.storage.runs import NewRun, created_run, unpublished_runs
from assetbus.producers.kafka.producer import create_producer
from assetbus.schemas import Topics
from assetbus.settings import Settings

DAG = "per_event"


async def _signals(bootstrap: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(3)]
        return int(sum((await consumer.end_offsets(parts)).values()))
    finally:
        await consumer.stop()


async def test_signals_on_the_broker_before_a_crash_are_marked_not_sent_again(
        infra: Settings, topics: Topics, engine: AsyncEngine,
        define_dags: Callable[..., Awaitable[object]]) -> None:
    await define_dags(ConsumerDag(dag_id=DAG, schedule=AssetWait("orders"), coalesce=False))
    new = [NewRun(str(uuid.uuid4()), DAG, f"p{n}", None, 1, [], "scheduler", "[]") for n in range(5)]
    async with engine.begin() as conn:
        written = await write_fanout(conn, new, [], [])
    runs = [created_run(run, written.run_ids[run.run_id], written.created_at) for run in new]
    topic = topics.readiness(DAG)
    await ReadinessTopics(infra.kafka, topics).ensure([DAG])

    crashed = AIOKafkaProducer(bootstrap_servers=infra.bootstrap_servers, acks="all")  # acked, then killed
    await crashed.start()
    try:
        for run in runs[:3]:
            await crashed.send_and_wait(topic, signal_json(run), key=(run.partition_key or "").encode())
    finally:
        await crashed.stop()
    assert await _signals(infra.bootstrap_servers, topic) == 3

    producer = create_producer(infra.kafka)
    await producer.start()
    try:
        publisher = ReadinessPublisher(producer, engine, topics, ReadinessTopics(infra.kafka, topics),
                                       connection=infra.kafka)
        sent = await publisher.publish_pending()
    finally:
        await producer.stop()
    assert (sent, publisher.found_sent) == (2, 3)
    assert await _signals(infra.bootstrap_servers, topic) == 5  # one signal per run
    async with engine.connect() as conn:
        assert await unpublished_runs(conn) == []
