"""Pipeline-wide metrics for Prometheus (docs/metrics.md), refreshed from the broker every `interval_s` by a
background task, so a scrape never waits on Kafka. A collector, not metric objects: the values are the broker's,
the same in every process, so under the API's multiprocess mode nothing is summed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from assetbus.consumers.observe.lag import consumer_group_lag, end_offsets, partitions_of
from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.access import AccessRefusals, naming_refusals
from assetbus.producers.kafka.periodic import every
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.observe")


STOP_WAIT_S = 5.0
"""How long `stop()` waits for a refresh in flight to notice its cancellation."""


class PipelineGauges(Collector):
    def __init__(self, connection: KafkaConnection, topics: Topics, registry: CollectorRegistry, *,
                 interval_s: float = 15.0, refusals: AccessRefusals | None = None) -> None:
        self._connection = connection
        self._topics = topics
        self._interval_s = interval_s
        self._refusals = refusals
        self.group_lag: dict[tuple[str, str], int] = {}
        """(group, topic) → records the group has not committed yet, as last read."""
        self.dead_letters: dict[str, int] = {}
        """dead-letter topic → records ever written to it (the sum of its end offsets), as last read."""
        self._task: asyncio.Task[None] | None = None
        registry.register(self)

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily("assetbus_consumer_group_lag", "Records a consumer group has not committed yet, "
                                "per group and topic (from the broker).", labels=["group", "topic"])
        for (group, topic), value in sorted(self.group_lag.items()):
            lag.add_metric([group, topic], value)
        dead = CounterMetricFamily("assetbus_dead_letters", "Records ever written to the dead-letter topic (the "
                                   "sum of its end offsets, from the broker; alert on its increase).",
                                   labels=["topic"])
        for topic, value in sorted(self.dead_letters.items()):
            dead.add_metric([topic], value)
        yield lag
        yield dead

    async def refresh(self) -> None:
        dlq = self._topics.emissions_dlq
        with naming_refusals(self._connection, "Describe", topics=(dlq,)):
            groups = await consumer_group_lag(self._connection, topic_prefix=self._topics.prefix)
            partitions = (await partitions_of(self._connection, [dlq])).get(dlq, [])
            ends = await end_offsets(self._connection, [TopicPartition(dlq, p) for p in partitions])
        self.group_lag = {(group.group_id, topic): value for group in groups
                          for topic, value in group.by_topic().items()}
        self.dead_letters = {dlq: sum(ends.values())}

    async def start(self) -> None:
        self._task = every(self._interval_s, self.refresh, what="refreshing the pipeline gauges", log=log,
                           first_after_s=0, refusals=self._refusals)

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
