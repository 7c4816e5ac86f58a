"""The scheduler service: asset events in, consumer runs and readiness signals out.

Per batch of `<prefix>.asset-events`: one DB transaction (queue entries, skips, runs; retried with
a bounded back-off while the database is away), then the offsets (FastStream AckPolicy.MANUAL),
while the batch's runs go to the ordered background publisher (signals, broker acks, then the
`published` flag). A crash before the commit repeats the batch: queue rows are unique per (dag,
event), so the repeat creates nothing new. A crash after it leaves runs unpublished: they are
sent at the next start, and by the timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer, TopicPartition
from faststream import AckPolicy
from faststream.kafka import KafkaBroker, KafkaMessage

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.logfilters import quiet_consumer_only_notice
from assetbus.consumers.observe import ProbeServer, ReadinessChecks
from assetbus.consumers.scheduler.apply import ApplyResult, apply_events
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.consumers.scheduler.decode import EventRecord, IncomingEvent, decode_events, keep_raw, tolerant_parser
from assetbus.consumers.scheduler.metrics import SchedulerMetrics
from assetbus.consumers.scheduler.publish import ReadinessPublisher, create_producer
from assetbus.consumers.scheduler.registry import DagRegistry
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage import create_engine, translated
from assetbus.producers.kafka import KafkaConnection

log = quiet_consumer_only_notice(logging.getLogger("assetbus.scheduler"))


@dataclass
class SchedulerStats:
    batches: int = 0
    events: int = 0
    unreadable: int = 0
    skipped: int = 0
    foreign: int = 0
    runs: int = 0


class Scheduler:
    """The service with an explicit lifecycle: `await start()`, `await stop()`, or `async with`."""

    def __init__(self, config: SchedulerConfig, metrics: SchedulerMetrics | None = None) -> None:
        self.config = config
        self.metrics = metrics or SchedulerMetrics()
        self._probes: ProbeServer | None = None
        self.engine = create_engine(config.database_url)
        self.registry = DagRegistry()
        self.readiness_topics = ReadinessTopics(config.bootstrap_servers, config.topics, config.readiness_partitions)
        self.producer: AIOKafkaProducer | None = None
        self.publisher: ReadinessPublisher | None = None
        self.stats = SchedulerStats()
        self._timer: asyncio.Task[None] | None = None
        self.broker = KafkaBroker(config.bootstrap_servers, consumer_only=True, logger=log, graceful_timeout=10.0,
                                  log_level=logging.DEBUG)  # "Received"/"Processed" per batch: debug only
        self.subscriber = self.broker.subscriber(
            config.topics.asset_events,
            group_id=config.group_id,
            batch=True,
            max_records=config.max_records,
            batch_timeout_ms=config.batch_timeout_ms,
            fetch_max_wait_ms=config.fetch_max_wait_ms,
            auto_offset_reset="earliest",
            ack_policy=AckPolicy.MANUAL,
            decoder=keep_raw,
            parser=tolerant_parser,
            max_poll_interval_ms=10 * 60 * 1000,
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
        )
        self.subscriber(self._on_batch)

    async def _on_batch(self, body: list[bytes], message: KafkaMessage) -> None:
        records: tuple[EventRecord, ...] = message.raw_message
        del body
        try:
            await self.handle(records)
        except Exception:
            # Not acked: the batch is delivered again; its events are no-ops the second time.
            log.exception("batch of %d asset events failed; it will be redelivered", len(records))
            self.metrics.batch_failures.inc()
            await asyncio.sleep(self.config.backoff_initial_s)
            await message.nack()
            return
        await message.ack()
        self._observe_positions(records)

    def _observe_positions(self, records: Sequence[EventRecord]) -> None:
        consumer = self.subscriber.consumer
        if consumer is None:
            return
        done: dict[tuple[str, int], int] = {}
        for record in records:
            done[(record.topic, record.partition)] = record.offset + 1
        behind = {}
        for (topic, partition), next_offset in done.items():
            end = consumer.highwater(TopicPartition(topic, partition))
            if end is not None:
                behind[(topic, partition)] = max(0, end - next_offset)
        self.metrics.positions(behind)

    async def handle(self, records: Sequence[EventRecord]) -> ApplyResult:
        """Apply one batch (committed when this returns) and hand its runs to the publisher."""
        events, unreadable = decode_events(records)
        started = time.perf_counter()
        result = await self.apply(events)
        self.metrics.applied(len(events), unreadable, result.skipped, result.runs, time.perf_counter() - started)
        assert self.publisher is not None, "call start() first"
        await self.publisher.submit(result.runs)
        self.stats.batches += 1
        self.stats.events += len(events)
        self.stats.unreadable += unreadable
        self.stats.skipped += result.skipped
        self.stats.foreign += result.foreign
        self.stats.runs += len(result.runs)
        return result

    async def apply(self, events: Sequence[IncomingEvent]) -> ApplyResult:
        """The batch's DB transaction, retried while the database is unavailable."""
        delay = self.config.backoff_initial_s
        while True:
            try:
                async with translated(), self.engine.begin() as conn:
                    await self.registry.refresh(conn)
                    return await apply_events(conn, self.registry.index, events)
            except StorageUnavailable as error:
                log.warning("database unavailable, retrying the batch in %.1fs: %s", delay, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.config.backoff_max_s)

    async def start(self) -> None:
        async with translated(), self.engine.connect() as conn:
            await self.registry.refresh(conn)
        await self.readiness_topics.ensure(self.registry.index.by_id)
        self.producer = create_producer(self.config.bootstrap_servers)
        await self.producer.start()
        try:
            self.publisher = ReadinessPublisher(self.producer, self.engine, self.config.topics, self.readiness_topics,
                                                metrics=self.metrics)
            await self.publisher.publish_pending()
            self.publisher.start()
            await self.broker.start()
        except BaseException:
            if self.publisher is not None:
                await self.publisher.stop(flush_timeout_s=0)
            await self.producer.stop()
            raise
        self._timer = asyncio.create_task(self._republish_periodically(), name="assetbus-scheduler-republish")
        if self.config.metrics_port is not None:
            checks = ReadinessChecks(broker=KafkaConnection(bootstrap_servers=self.config.bootstrap_servers),
                                     database_url=self.config.database_url)
            self._probes = ProbeServer(self.metrics.registry, self.config.metrics_port, self.config.metrics_host,
                                       checks=checks)
            self._probes.start()

    @property
    def metrics_port(self) -> int | None:
        return self._probes.port if self._probes is not None else None

    async def stop(self) -> None:
        try:
            if self._timer is not None:
                self._timer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._timer
            await self.broker.stop()
            if self.publisher is not None:
                await self.publisher.stop()
        finally:
            if self._probes is not None:
                self._probes.stop()
                self._probes = None
            if self.producer is not None:
                await self.producer.stop()
            await self.engine.dispose()

    async def __aenter__(self) -> Scheduler:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _republish_periodically(self) -> None:
        assert self.publisher is not None
        logged = dataclasses.replace(self.stats)
        while True:
            await asyncio.sleep(self.config.republish_interval_s)
            try:
                await self.publisher.publish_pending()
            except Exception as error:  # the next round tries again
                log.warning("republishing unpublished runs failed: %s", error)
            if self.stats != logged:
                logged = dataclasses.replace(self.stats)
                log.info("scheduler totals: %d batches, %d events, %d runs, %d signals published, %d skipped, "
                         "%d unreadable, %d foreign", logged.batches, logged.events, logged.runs,
                         self.publisher.published, logged.skipped, logged.unreadable, logged.foreign)


async def serve(config: SchedulerConfig) -> None:
    """Run a scheduler until SIGINT or SIGTERM (`assetbus run scheduler`)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    async with Scheduler(config):
        log.info("scheduler running: %s → readiness topics (group %s)", config.topics.asset_events, config.group_id)
        await stopping.wait()
    log.info("scheduler stopped")
