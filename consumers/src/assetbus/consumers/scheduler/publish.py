"""Publishing readiness signals for runs, then marking them published.

The DB commit comes first, the signal second. The scheduler hands each batch's new runs to this
publisher and commits its offsets at once: one background task sends everything handed over so
far in creation order (whole record batches per partition), waits for the broker's acks, and
marks the runs published in one statement, while the next batch is already in its transaction.
A crash before the acks leaves runs with `published = false`; `publish_pending()` sends them at
the next start and on a timer (also runs a replay created). A run always keeps its run id, so a
repeated signal is recognisable by subscribers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler.metrics import SchedulerMetrics
from assetbus.consumers.scheduler.payload import signal_json
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage.faults import translated
from assetbus.consumers.storage.runs import RunRow, mark_published, unpublished_runs
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.scheduler")


def create_producer(bootstrap_servers: str) -> AIOKafkaProducer:
    """Idempotent, acks=all: a signal the broker acknowledged is on the log."""
    return AIOKafkaProducer(bootstrap_servers=bootstrap_servers, enable_idempotence=True, acks="all", linger_ms=2,
                            max_batch_size=256 * 1024)


class ReadinessPublisher:
    """Sends signals for runs and records that the broker has them. `publish()` sends now;
    `submit()` hands runs to the background sender (start it with `start()`)."""

    def __init__(self, producer: AIOKafkaProducer, engine: AsyncEngine, topics: Topics,
                 readiness_topics: ReadinessTopics, *, max_backlog: int = 50_000, retry_s: float = 0.5,
                 metrics: SchedulerMetrics | None = None) -> None:
        self._producer = producer
        self._engine = engine
        self._topics = topics
        self._readiness_topics = readiness_topics
        self._lock = asyncio.Lock()
        self._partitioner = DefaultPartitioner()
        self._partition_lists: dict[str, tuple[list[int], list[int]]] = {}
        self._backlog: list[RunRow] = []
        self._in_flight: set[int] = set()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._room = asyncio.Event()
        self._room.set()
        self._max_backlog = max_backlog
        self._retry_s = retry_s
        self._task: asyncio.Task[None] | None = None
        self._metrics = metrics
        self.published = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._send_submitted(), name="assetbus-readiness-publisher")

    async def stop(self, flush_timeout_s: float = 10.0) -> None:
        """Send what was handed over (for up to `flush_timeout_s`), then stop; the rest stays unpublished."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), flush_timeout_s)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def submit(self, runs: Sequence[RunRow]) -> None:
        """Queue runs for the background sender; waits while the backlog is full (backpressure)."""
        if runs:
            self._backlog.extend(runs)
            self._in_flight.update(run.id for run in runs)
            self._idle.clear()
            self._wakeup.set()
            if len(self._backlog) >= self._max_backlog:
                self._room.clear()
        await self._room.wait()

    async def publish(self, runs: Sequence[RunRow]) -> int:
        """Signal these runs now, wait for every broker ack, then mark them published."""
        if not runs:
            return 0
        async with self._lock:
            return await self._publish(runs)

    async def publish_pending(self, page: int = 1000) -> int:
        """Signal every run still marked unpublished (after a crash, or created by replay)."""
        total = 0
        async with self._lock:
            while True:
                async with translated(), self._engine.connect() as conn:
                    found = await unpublished_runs(conn, page)
                runs = [run for run in found if run.id not in self._in_flight]  # the sender has those
                if runs:
                    if total == 0:
                        log.info("publishing %d run(s) left unpublished", len(runs))
                    total += await self._publish(runs)
                if len(found) < page or not runs:
                    return total

    async def _send_submitted(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            runs, self._backlog = self._backlog, []
            self._room.set()
            try:
                await self.publish(runs)
            except Exception as error:  # kept in order at the front; they are in the database anyway
                log.warning("publishing %d readiness signal(s) failed, retrying: %s", len(runs), error)
                self._backlog[:0] = runs
                await asyncio.sleep(self._retry_s)
                self._wakeup.set()
                continue
            self._in_flight.difference_update(run.id for run in runs)
            if not self._backlog:
                self._idle.set()

    async def _publish(self, runs: Sequence[RunRow]) -> int:
        await self._readiness_topics.ensure({run.dag_id for run in runs})
        by_partition: dict[tuple[str, int], list[tuple[bytes, bytes]]] = {}
        for run in sorted(runs, key=lambda r: r.id):
            topic = self._topics.readiness(run.dag_id)
            key = (run.partition_key or "").encode()
            partition = self._partitioner(key, *await self._partitions(topic))
            by_partition.setdefault((topic, partition), []).append((key, signal_json(run)))
        pending: list[asyncio.Future[Any]] = []
        for (topic, partition), messages in by_partition.items():
            pending.extend(await self._send_in_batches(topic, partition, messages))
        await asyncio.gather(*pending)
        async with translated(), self._engine.begin() as conn:
            await mark_published(conn, [run.id for run in runs])
        self.published += len(runs)
        if self._metrics is not None:
            self._metrics.published(runs)
        return len(runs)

    async def _send_in_batches(self, topic: str, partition: int,
                               messages: list[tuple[bytes, bytes]]) -> list[asyncio.Future[Any]]:
        """Whole record batches per partition (in order): far less per-message work than send()."""
        futures: list[asyncio.Future[Any]] = []
        batch = self._producer.create_batch()
        for key, value in messages:
            if batch.append(key=key, value=value, timestamp=None) is None:
                futures.append(await self._producer.send_batch(batch, topic, partition=partition))
                batch = self._producer.create_batch()
                if batch.append(key=key, value=value, timestamp=None) is None:  # larger than a whole batch
                    futures.append(await self._producer.send(topic, value, key=key, partition=partition))
        if batch.record_count():
            futures.append(await self._producer.send_batch(batch, topic, partition=partition))
        return futures

    async def _partitions(self, topic: str) -> tuple[list[int], list[int]]:
        """(all, available) partitions of a topic, as the default partitioner wants them; cached."""
        known = self._partition_lists.get(topic)
        if known is None:
            ids = sorted(await self._producer.partitions_for(topic))
            known = self._partition_lists[topic] = (ids, ids)
        return known
