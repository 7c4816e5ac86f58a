"""Pipeline-wide gauges for Prometheus: every consumer group's lag and the dead letters waiting.

A background task refreshes them from the broker every `interval_s` (a scrape never waits on
Kafka); explicit lifecycle: `await start()` / `await stop()`. The API exports them.
"""

from __future__ import annotations

import asyncio
import logging

from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry, Gauge

from assetbus.consumers.observe.lag import consumer_group_lag, end_offsets, partitions_of
from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.periodic import every
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.observe")


STOP_WAIT_S = 5.0
"""How long `stop()` waits for a refresh in flight to notice its cancellation."""


class PipelineGauges:
    def __init__(self, connection: KafkaConnection, topics: Topics, registry: CollectorRegistry, *,
                 interval_s: float = 15.0) -> None:
        self._connection = connection
        self._topics = topics
        self._interval_s = interval_s
        self.group_lag = Gauge("assetbus_consumer_group_lag", "Records a consumer group has not committed yet, "
                               "per group and topic (from the broker).", ["group", "topic"], registry=registry)
        self.dead_letters = Gauge("assetbus_dead_letters", "Records ever written to the dead-letter topic (the sum "
                                  "of its end offsets; alert on its increase).",
                                  ["topic"], registry=registry)
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> None:
        groups = await consumer_group_lag(self._connection, topic_prefix=self._topics.prefix)
        self.group_lag.clear()
        for group in groups:
            for topic, lag in group.by_topic().items():
                self.group_lag.labels(group=group.group_id, topic=topic).set(lag)
        dlq = self._topics.emissions_dlq
        partitions = (await partitions_of(self._connection, [dlq])).get(dlq, [])
        ends = await end_offsets(self._connection, [TopicPartition(dlq, p) for p in partitions])
        self.dead_letters.labels(topic=dlq).set(sum(ends.values()))

    async def start(self) -> None:
        self._task = every(self._interval_s, self.refresh, what="refreshing the pipeline gauges", log=log,
                           first_after_s=0)

    async def stop(self) -> None:
        """Cancel the refresh loop; one stuck in a Kafka call is left behind after `STOP_WAIT_S`, so that a
        shutdown never hangs on a gauge."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=STOP_WAIT_S)
        if not done:
            log.warning("the pipeline gauges did not stop within %.0f s; leaving their refresh behind", STOP_WAIT_S)
        elif not task.cancelled() and task.exception() is not None:
            log.warning("the pipeline gauges ended with %r", task.exception())

