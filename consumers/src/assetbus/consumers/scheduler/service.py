"""The scheduler service: asset events in, consumer runs and readiness signals out (docs/consumer-dags.md).

Per batch of `<prefix>.asset-events` (the toolkit's pipelined consume → handle → commit shell): one DB
transaction (retried while the database is away), then the batch's offsets, while its runs go to the ordered
background publisher. A crash before the commit repeats the batch, which creates nothing new (queue rows are
unique per (dag, event)); one after it leaves runs unpublished, sent at the next start and by the timer.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from aiokafka.errors import KafkaError
from opentelemetry.context import Context

from assetbus.consumers.errors import NotStarted
from assetbus.consumers.faults import storage_unavailable
from assetbus.consumers.observe.service import Service
from assetbus.consumers.scheduler.apply import ApplyResult, DagRegistry, Routed, apply_events, route_batch
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.consumers.scheduler.metrics import SchedulerMetrics
from assetbus.consumers.scheduler.payload import IncomingEvent, decode_batch
from assetbus.consumers.scheduler.publish import ReadinessPublisher, create_producer, traced_events
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage import create_engine, translated
from assetbus.producers.kafka.access import KafkaAccessDenied
from assetbus.producers.kafka.renewal import RenewableProducer
from assetbus.producers.kafka.retry import retry_until
from assetbus.producers.kafka.shell import ServiceShell
from assetbus.producers.kafka.startup import startup_policy
from assetbus.producers.kafka.topics import TopicCreator, core_specs
from assetbus.producers.kafka.types import ConsumedRecord

log = logging.getLogger("assetbus.scheduler")

REPUBLISHING = "republishing unpublished runs"


@dataclass(slots=True)
class PreparedBatch:
    events: list[IncomingEvent]
    unreadable: int
    routed: Routed
    traces: dict[int, Context] = field(default_factory=dict)


@dataclass
class SchedulerStats:
    batches: int = 0
    events: int = 0
    unreadable: int = 0
    skipped: int = 0
    foreign: int = 0
    runs: int = 0


class Scheduler(Service):
    def __init__(self, config: SchedulerConfig, metrics: SchedulerMetrics | None = None) -> None:
        self.config: SchedulerConfig = config
        self.log = log
        self.metrics: SchedulerMetrics = metrics or SchedulerMetrics()
        # no pre-ping: it was a round trip per batch on the path to readiness; a connection the database
        # dropped fails the batch's first statement instead, and `apply` retries the batch on a new one
        self.engine = create_engine(config.database_url, pre_ping=False)
        self.registry = DagRegistry()
        self.readiness_topics = ReadinessTopics(TopicCreator(config.kafka, create=config.create_topics),
                                                config.topics, config.readiness_partitions)
        self.publisher: ReadinessPublisher | None = None
        self.stats = SchedulerStats()
        self.retry = config.retry_policy()
        self._logged = SchedulerStats()
        self.shell: ServiceShell[PreparedBatch] = ServiceShell(
            config.kafka, config.consumer_settings(config.topics.asset_events),
            self._on_batch, prepare=self.prepare, retry=self.retry, log=log, name="assetbus-scheduler",
            metrics=self.metrics, on_failure=lambda error: self.metrics.batch_failures.inc(), refusals=self.refusals)

    async def prepare(self, records: Sequence[ConsumedRecord]) -> PreparedBatch:
        """Decode and route a batch: CPU work that the shell overlaps with the previous batch's statements."""
        events, unreadable = await decode_batch(records)
        return PreparedBatch(events, unreadable, await route_batch(self.registry.index, events), traced_events(records))

    async def _on_batch(self, batch: PreparedBatch) -> None:
        """Apply one batch (committed when this returns) and hand its runs to the publisher. Raising rewinds the
        batch: it is delivered again, and its events are no-ops the second time."""
        events, unreadable = batch.events, batch.unreadable
        started = time.perf_counter()
        result = await self.apply(events, batch.routed)
        self.metrics.applied(len(events), unreadable, result.skipped, result.runs, time.perf_counter() - started)
        if self.publisher is None:
            raise NotStarted("the scheduler's signal publisher")
        await self.publisher.submit(result.runs, batch.traces)
        self.stats.batches += 1
        self.stats.events += len(events)
        self.stats.unreadable += unreadable
        self.stats.skipped += result.skipped
        self.stats.foreign += result.foreign
        self.stats.runs += len(result.runs)

    async def apply(self, events: Sequence[IncomingEvent], routed: Routed) -> ApplyResult:
        async def transaction() -> ApplyResult:
            async with translated(), self.engine.begin() as conn:
                return await apply_events(conn, self.registry, events, routed)

        return await retry_until(transaction, self.retry, what="the database", retriable=storage_unavailable, log=log)

    async def dependencies(self, stack: AsyncExitStack) -> None:
        await self.wait_for(stack, self.config, engine=self.engine,
                            required=core_specs(self.config.topics, only=[self.config.topics.asset_events]))

    async def started(self, stack: AsyncExitStack) -> None:
        config = self.config
        log.info("scheduler running: %s → readiness topics (group %s) on %s", config.topics.asset_events,
                 config.group_id, config.kafka.describe())

    async def open(self, stack: AsyncExitStack) -> None:
        """The DAG registry, the readiness topics, the producer and publisher; what a crash left unpublished
        is sent before the group is joined, and looked for again every `republish_interval_s`."""
        async with translated(), self.engine.connect() as conn:
            await self.registry.refresh(conn)
        await retry_until(lambda: self.readiness_topics.ensure(self.registry.index.by_id),
                          startup_policy(self.config.startup_timeout_s), what="the readiness topics",
                          retriable=lambda error: isinstance(error, KafkaError),
                          log=log)  # a broker may be down while its partitions move to another
        renewable = RenewableProducer(lambda: create_producer(self.config.kafka, linger_ms=2,
                                                              max_batch_bytes=256 * 1024))
        await renewable.start()
        stack.push_async_callback(renewable.stop)
        publisher = ReadinessPublisher(renewable, self.engine, self.config.topics, self.readiness_topics,
                                       metrics=self.metrics, connection=self.config.kafka, refusals=self.refusals)
        self.publisher = publisher
        try:
            with self.refusals.watching(REPUBLISHING):
                await publisher.publish_pending()
        except KafkaAccessDenied as denied:  # the service still schedules; /readyz names the ACL until granted
            log.error("runs left unpublished cannot be sent: %s", denied)
        publisher.start()
        stack.push_async_callback(publisher.stop)
        self._logged = dataclasses.replace(self.stats)
        self.every(self.config.republish_interval_s, self._republish, what=REPUBLISHING, stack=stack)

    async def _republish(self) -> None:
        assert self.publisher is not None
        await self.publisher.publish_pending()
        if self.stats != self._logged:
            logged = self._logged = dataclasses.replace(self.stats)
            log.info("scheduler totals: %d batches, %d events, %d runs, %d signals published, %d skipped, "
                     "%d unreadable, %d foreign", logged.batches, logged.events, logged.runs,
                     self.publisher.published, logged.skipped, logged.unreadable, logged.foreign)
