"""Airflow triggers that read assetbus's topics with aiokafka, in Airflow's triggerer (docs/airflow.md,
"Event-driven scheduling"): `AssetbusReadinessTrigger` for AssetWatchers, whose event's `extra["payload"]`
is the readiness signal, and `AssetbusPartitionTrigger`, what `AssetbusPartitionSensor` defers to.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Hashable, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent
from airflow.triggers.shared_stream import AdvanceItem, SharedStreamProducer, reject_shared_stream_event
from pydantic import ValidationError

from assetbus.producers.airflow.connection import default_conn_id, worker_access
from assetbus.producers.airflow.credentials import emitter_settings
from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import TopicMissing
from assetbus.producers.kafka.producer import started
from assetbus.producers.kafka.retry import RetryPolicy, RetryTimeout, retry_until
from assetbus.schemas import AssetEvent, ReadinessSignal, Topics

log = logging.getLogger(__name__)


class TriggerSetupError(EmitterError):
    """The triggerer cannot tell which Kafka or topic prefix to read, or the topic does not exist."""


class SignalNotStored(EmitterError):
    """Airflow did not confirm that a readiness signal's event is in its database; the stream reads it again."""

    retriable = True


_UNSET = {
    "bootstrap_servers": "the triggerer has no Kafka for assetbus: give the connection {} a `kafka` or "
                         "`kafka_conn_id` extra (or set KAFKA_BOOTSTRAP_SERVERS in the triggerer)",
    "topic_prefix": "the triggerer has no assetbus topic prefix: give the connection {} a `topic_prefix` extra (or "
                    "set ASSETBUS_TOPIC_PREFIX)",
}


async def _kafka_and_topics(conn_id: str | None) -> tuple[KafkaConnection, Topics]:
    """A worker's emitter settings without the API's answer (a trigger asks for no token): the connection's,
    else the triggerer's environment's."""
    conn_id = conn_id or default_conn_id()
    try:
        kafka, prefix = emitter_settings(await asyncio.to_thread(worker_access, conn_id), {})
    except KeyError as unset:
        raise TriggerSetupError(_UNSET[unset.args[0]].format(conn_id)) from None
    return kafka, Topics(prefix=prefix)


TOPIC_WAIT = RetryPolicy(initial_s=0.5, max_s=2.0, timeout_s=300.0)
"""How long a readiness watcher waits for its topic before it fails (Airflow then starts it again)."""


async def _wait_for_topic(consumer: AIOKafkaConsumer, topic: str, policy: RetryPolicy) -> None:
    """Return once the brokers list `topic`; TriggerSetupError naming it once `policy` gives up."""
    async def listed() -> None:
        if topic not in await consumer.topics():
            raise TopicMissing(topic, "readiness topic")

    def first_miss(error: BaseException, delay: float) -> None:
        del error, delay
        if not announced:
            announced.append(True)
            log.info("waiting for the readiness topic %s (created when the assetbus scheduler has the consumer "
                     "DAG; up to %.0fs)", topic, policy.timeout_s or 0)

    announced: list[bool] = []
    try:
        await retry_until(listed, policy, what=f"the readiness topic {topic}",
                          retriable=lambda error: isinstance(error, TopicMissing), on_retry=first_miss)
    except RetryTimeout as error:
        raise TriggerSetupError(f"the readiness topic {topic} does not exist after {error.waited_s:.0f}s: the "
                                f"assetbus scheduler creates it once it has the consumer DAG; check the DAG id and "
                                f"the connection's topic_prefix") from error


class ReadinessStream(SharedStreamProducer):  # type: ignore[misc]
    """The broker side of `AssetbusReadinessTrigger` in Airflow's ack mode: one consumer per watcher, committing
    a position only once Airflow has stored the events of the records up to it (`advance`)."""

    def __init__(self, *, dag_id: str, conn_id: str | None = None, group_id: str | None = None) -> None:
        self.dag_id = dag_id
        self.conn_id = conn_id
        self.group_id = group_id
        self._consumer: AIOKafkaConsumer | None = None

    async def open_stream(self) -> AsyncIterator[tuple[ConsumerRecord, tuple[TopicPartition, int]]]:
        kafka, topics = await _kafka_and_topics(self.conn_id)
        topic = topics.readiness(self.dag_id)
        consumer = AIOKafkaConsumer(group_id=self.group_id or f"{topics.prefix}-watcher.{self.dag_id}",
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    **kafka.client_kwargs("consumer"))
        self._consumer = consumer
        await consumer.start()
        await _wait_for_topic(consumer, topic, TOPIC_WAIT)
        consumer.subscribe([topic])
        async for record in consumer:
            if record.value is not None:  # a tombstone is passed by: the next commit covers its offset
                yield record, (TopicPartition(record.topic, record.partition), record.offset)

    def get_advance_lane(self, broker_payload: tuple[TopicPartition, int]) -> TopicPartition:
        return broker_payload[0]

    async def advance(self, batch: Sequence[AdvanceItem]) -> None:
        """Commit past the batch's records (one partition's, in order) whose events Airflow stored. One it did not
        store (the write failed, or timed out) fails the stream: the triggerer starts the trigger again, which
        reads on from there."""
        assert self._consumer is not None
        position: tuple[TopicPartition, int] | None = None
        try:
            for item in batch:
                partition, offset = item.broker_payload
                outcome = item.outcome
                if outcome.failed or not (outcome.acked or outcome.rejected):
                    raise SignalNotStored(f"the readiness signal at {partition.topic}[{partition.partition}] "
                                          f"offset {offset} did not reach Airflow's database; reading again from there")
                position = (partition, offset)
        finally:
            if position is not None:
                await self._consumer.commit({position[0]: position[1] + 1})

    async def aclose(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await consumer.stop()


class AssetbusReadinessTrigger(BaseEventTrigger):  # type: ignore[misc]
    """Fire an event for each readiness signal of the assetbus consumer DAG `dag_id` (for an AssetWatcher), read
    in the consumer group `group_id` (default `<prefix>-watcher.<dag_id>`) in Airflow's ack mode: a triggerer
    killed at any point can hand a signal over twice, never lose it."""

    def __init__(self, dag_id: str, *, conn_id: str | None = None, group_id: str | None = None) -> None:
        super().__init__()
        Topics().readiness(dag_id)  # a DAG id that cannot name a topic fails when the DAG is parsed
        self.dag_id = dag_id
        self.conn_id = conn_id
        self.group_id = group_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{__name__}.AssetbusReadinessTrigger", {"dag_id": self.dag_id, "conn_id": self.conn_id,
                                                     "group_id": self.group_id}

    def shared_stream_key(self) -> Hashable:
        return (f"{__name__}.AssetbusReadinessTrigger", self.dag_id, self.conn_id, self.group_id)

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> ReadinessStream:
        return ReadinessStream(**kwargs)

    async def filter_shared_stream(self, shared_stream: AsyncIterator[ConsumerRecord]) -> AsyncIterator[TriggerEvent]:
        async for record in shared_stream:
            try:
                signal = ReadinessSignal.model_validate_json(record.value)
            except ValidationError as error:
                self.log.error("passing by the record at %s[%d] offset %d: not a readiness signal: %s",
                               record.topic, record.partition, record.offset, str(error)[:300])
                reject_shared_stream_event()
                continue
            yield TriggerEvent(signal.model_dump(mode="json"))

    async def run(self) -> AsyncIterator[TriggerEvent]:
        raise TriggerSetupError("AssetbusReadinessTrigger runs in Airflow 3.3's triggerer, through its shared "
                                "stream in ack mode (filter_shared_stream), never through run()")
        yield  # an async generator, like every trigger's run()


class AssetbusPartitionTrigger(BaseTrigger):  # type: ignore[misc]
    """Fire once assetbus has stored an event of `asset_name` (for `partition_key`, if given), with the event as
    the payload. It reads `<prefix>.asset-events` from its oldest retained event, with no consumer group."""

    def __init__(self, asset_name: str, *, partition_key: str | None = None, conn_id: str | None = None) -> None:
        super().__init__()
        self.asset_name = asset_name
        self.partition_key = partition_key
        self.conn_id = conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{__name__}.AssetbusPartitionTrigger", {"asset_name": self.asset_name,
                                                     "partition_key": self.partition_key, "conn_id": self.conn_id}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        kafka, topics = await _kafka_and_topics(self.conn_id)
        consumer = AIOKafkaConsumer(topics.asset_events, group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="earliest", **kafka.client_kwargs("consumer"))
        async with started(consumer):
            async for message in consumer:
                if message.value is None:
                    continue
                event = AssetEvent.model_validate_json(message.value)
                if event.asset.name == self.asset_name and \
                        (self.partition_key is None or event.partition_key == self.partition_key):
                    yield TriggerEvent(event.model_dump(mode="json"))
                    return
