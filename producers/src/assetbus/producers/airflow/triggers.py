"""Airflow triggers that read assetbus's topics with aiokafka, in Airflow's triggerer.

- `AssetbusReadinessTrigger` (a `BaseEventTrigger`, for Airflow 3's event-driven scheduling): each
  readiness signal of an assetbus consumer DAG (`<prefix>.readiness.<dag_id>`) becomes an Airflow asset
  event, through an `AssetWatcher`:

      ready = Asset("orders_ready", watchers=[AssetWatcher(
          name="orders_ready", trigger=AssetbusReadinessTrigger(dag_id="orders_by_partition"))])
      with DAG(dag_id="on_orders_ready", schedule=[ready]): ...

  The signal is the event's `extra["payload"]` (run id, partition key and date, generation, the
  triggering events). Airflow gives watcher events no partition key, and one Airflow run may cover
  several signals: for one run per partition, use the bridge.
- `AssetbusPartitionTrigger`: fires once a stored event of one asset (and partition) is on
  `<prefix>.asset-events`; what `AssetbusPartitionSensor` defers to.

Kafka and the topic prefix come from the `assetbus` connection's `kafka` (or `kafka_conn_id`) and
`topic_prefix` extras, read in the triggerer, else from `KAFKA_*` and `ASSETBUS_TOPIC_PREFIX` there.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator
from typing import Any

from aiokafka import AIOKafkaConsumer
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from assetbus.producers.airflow.connection import default_conn_id, worker_access
from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import AssetEvent, ReadinessSignal, Topics

_HERE = __name__
TOPIC_POLL_S = 2.0


class TriggerSetupError(EmitterError):
    """The triggerer cannot tell which Kafka or topic prefix to read."""


async def _kafka_and_topics(conn_id: str | None) -> tuple[KafkaConnection, Topics]:
    access = await asyncio.to_thread(worker_access, conn_id or default_conn_id())
    kafka = access.kafka
    if kafka is None:
        if not os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
            raise TriggerSetupError(f"the triggerer has no Kafka for assetbus: give the connection "
                                    f"{conn_id or default_conn_id()} a `kafka` or `kafka_conn_id` extra "
                                    f"(or set KAFKA_BOOTSTRAP_SERVERS in the triggerer)")
        kafka = KafkaConnection.from_environ()
    prefix = access.topic_prefix or os.environ.get("ASSETBUS_TOPIC_PREFIX")
    if not prefix:
        raise TriggerSetupError(f"the triggerer has no assetbus topic prefix: give the connection "
                                f"{conn_id or default_conn_id()} a `topic_prefix` extra (or set ASSETBUS_TOPIC_PREFIX)")
    return kafka, Topics(prefix=prefix)


async def _topic_exists(consumer: AIOKafkaConsumer, topic: str) -> None:
    """Return once the brokers know `topic` (polled every TOPIC_POLL_S)."""
    for _ in itertools.count():
        if topic in await consumer.topics():
            return
        await asyncio.sleep(TOPIC_POLL_S)


class AssetbusReadinessTrigger(BaseEventTrigger):  # type: ignore[misc]
    """Fire an event for each readiness signal of the assetbus consumer DAG `dag_id` (for an AssetWatcher).

    The triggerer reads the signals in the consumer group `group_id` (default
    `assetbus-watcher.<dag_id>`), from the oldest one not yet handed to Airflow, and commits a signal's
    offset after Airflow took its event: a triggerer restart can hand a signal over twice, never lose it.
    """

    def __init__(self, dag_id: str, *, conn_id: str | None = None, group_id: str | None = None) -> None:
        super().__init__()
        Topics().readiness(dag_id)  # a DAG id that cannot name a topic fails when the DAG is parsed
        self.dag_id = dag_id
        self.conn_id = conn_id
        self.group_id = group_id or f"assetbus-watcher.{dag_id}"

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.AssetbusReadinessTrigger", {"dag_id": self.dag_id, "conn_id": self.conn_id,
                                                     "group_id": self.group_id}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        kafka, topics = await _kafka_and_topics(self.conn_id)
        topic = topics.readiness(self.dag_id)
        consumer = AIOKafkaConsumer(group_id=self.group_id, enable_auto_commit=False, auto_offset_reset="earliest",
                                    **kafka.client_kwargs("consumer"))
        await consumer.start()
        try:
            if topic not in await consumer.topics():
                self.log.info("waiting for the readiness topic %s (created when the assetbus scheduler has the "
                              "consumer DAG)", topic)
                await _topic_exists(consumer, topic)
            consumer.subscribe([topic])
            async for message in consumer:
                if message.value is None:
                    continue
                signal = ReadinessSignal.model_validate_json(message.value)
                yield TriggerEvent(signal.model_dump(mode="json"))
                await consumer.commit()
        finally:
            await consumer.stop()


class AssetbusPartitionTrigger(BaseTrigger):  # type: ignore[misc]
    """Fire once assetbus has stored an event of `asset_name` (for `partition_key`, if given).

    It reads `<prefix>.asset-events` from its oldest retained event (no consumer group), so an event
    stored before the trigger started counts; the event's fields are the trigger event's payload.
    """

    def __init__(self, asset_name: str, *, partition_key: str | None = None, conn_id: str | None = None) -> None:
        super().__init__()
        self.asset_name = asset_name
        self.partition_key = partition_key
        self.conn_id = conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{_HERE}.AssetbusPartitionTrigger", {"asset_name": self.asset_name,
                                                     "partition_key": self.partition_key, "conn_id": self.conn_id}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        kafka, topics = await _kafka_and_topics(self.conn_id)
        consumer = AIOKafkaConsumer(topics.asset_events, group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="earliest", **kafka.client_kwargs("consumer"))
        await consumer.start()
        try:
            async for message in consumer:
                if message.value is None:
                    continue
                event = AssetEvent.model_validate_json(message.value)
                if event.asset.name == self.asset_name and \
                        (self.partition_key is None or event.partition_key == self.partition_key):
                    yield TriggerEvent(event.model_dump(mode="json"))
                    return
        finally:
            await consumer.stop()
