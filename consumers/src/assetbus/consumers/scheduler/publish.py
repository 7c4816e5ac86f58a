"""Publishing readiness signals for runs after their DB commit, then marking them published (docs/consumer-dags.md).

One background task sends the runs handed over in creation order (whole record batches per partition) and
waits for the acks; a second marks the acknowledged runs published in one statement, so the next signals do
not wait for it. Runs a crash left unpublished (or a replay created) are sent by `publish_pending()`, unless
their signal is on the tail of their readiness partition already (`on_the_broker`): then they are only marked.

An ACL refusal is raised as `KafkaAccessDenied` naming it, and held in `refusals` while it lasts. A batch the
broker refused breaks the idempotent producer's sequence numbers: a `RenewableProducer` starts a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from opentelemetry.context import Context
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.faults import translated
from assetbus.consumers.scheduler.metrics import SchedulerMetrics
from assetbus.consumers.scheduler.payload import signal_json
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage.runs import RunRow, mark_published, unpublished_runs
from assetbus.producers.kafka.access import AccessRefusals, naming_refusals
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.periodic import cancel_and_wait
from assetbus.producers.kafka.producer import create_producer, started
from assetbus.producers.kafka.renewal import RenewableProducer
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.kafka.sender import BatchSender, wait_all
from assetbus.producers.kafka.types import ConsumedRecord
from assetbus.producers.tracing import context_of, span_headers
from assetbus.schemas import Topics
from assetbus.schemas.codecs import read_event
from assetbus.schemas.codecs.text import IsoTimes

__all__ = ["ReadinessPublisher", "create_producer", "traced_events"]

log = logging.getLogger("assetbus.scheduler")

SENDING = "publishing readiness signals"

MAX_BACKLOG = 50_000
"""Runs handed over and not sent yet beyond which `submit()` waits (backpressure on the scheduler)."""


class ReadinessPublisher:
    """`publish()` sends now; `submit()` hands runs to the background sender (start it with `start()`)."""

    def __init__(self, producer: AIOKafkaProducer | RenewableProducer, engine: AsyncEngine, topics: Topics,
                 readiness_topics: ReadinessTopics, *, metrics: SchedulerMetrics | None = None,
                 connection: KafkaConnection | None = None, refusals: AccessRefusals | None = None) -> None:
        self._engine = engine
        self._topics = topics
        self._readiness_topics = readiness_topics
        self._lock = asyncio.Lock()
        self._sender = BatchSender(producer)
        self._backlog: list[RunRow] = []
        self._traces: dict[int, list[Context]] = {}
        self._in_flight: set[int] = set()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._room = asyncio.Event()
        self._room.set()
        self._retry = RetryPolicy(initial_s=0.5, max_s=5.0)
        self._task: asyncio.Task[None] | None = None
        self._marker: asyncio.Task[None] | None = None
        self._acked: list[int] = []
        """Runs the broker acknowledged, not yet marked published (still in `_in_flight`)."""
        self._marking = asyncio.Event()
        self._busy = 0
        """Sends and marking transactions in progress."""
        self._metrics = metrics
        self._refusals = refusals or AccessRefusals()
        self._connection = connection
        """Where to look for signals sent before a crash (`publish_pending`); None: send every unpublished run."""
        self.published = 0
        self.found_sent = 0
        """Unpublished runs whose signal `publish_pending` found on the broker already, and only marked."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._forever(self._wakeup, self._send_submitted),
                                         name="assetbus-readiness-publisher")
        self._marker = asyncio.create_task(self._forever(self._marking, self._mark_acked),
                                           name="assetbus-readiness-marker")

    async def stop(self, flush_timeout_s: float = 10.0) -> None:
        """Send and mark what was handed over (for up to `flush_timeout_s`), then stop; the rest stays unpublished."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), flush_timeout_s)
        for task in (self._task, self._marker):
            await cancel_and_wait(task)

    async def submit(self, runs: Sequence[RunRow], traces: Mapping[int, Context] | None = None) -> None:
        """Queue runs for the background sender; waits while the backlog is full (backpressure). `traces`: the
        trace context of triggering events, by event id; a run's signal carries the context of an `assetbus
        signal` span, a child of its first traced event's context and linked to the others'."""
        if traces:
            self.note_traces(runs, traces)
        if runs:
            self._backlog.extend(runs)
            self._in_flight.update(run.id for run in runs)
            self._idle.clear()
            self._wakeup.set()
            if len(self._backlog) >= MAX_BACKLOG:
                self._room.clear()
        await self._room.wait()

    def note_traces(self, runs: Sequence[RunRow], traces: Mapping[int, Context]) -> None:
        for run in runs:
            contexts = [traces[e] for e in (int(event.get("event_id", -1)) for event in run.events) if e in traces]
            if contexts:
                self._traces[run.id] = contexts

    def signal_headers(self, run: RunRow) -> tuple[tuple[str, bytes], ...]:
        """The trace headers of a run's signal (an `assetbus signal` span), once; none for an untraced run."""
        contexts = self._traces.pop(run.id, None)
        return span_headers("assetbus signal", contexts[0], links=contexts[1:]) if contexts else ()

    async def publish(self, runs: Sequence[RunRow]) -> int:
        """Signal these runs now, wait for every broker ack, then mark them published."""
        if not runs:
            return 0
        async with self._lock:
            return await self._publish(runs)

    async def publish_pending(self, page: int = 1000) -> int:
        """Signal every run still marked unpublished (after a crash, or created by replay); those whose signal
        is on the broker already are only marked. Returns how many were sent."""
        total = 0
        async with self._lock:
            while True:
                async with translated(), self._engine.connect() as conn:
                    found = await unpublished_runs(conn, page)
                candidates = [run for run in found if run.id not in self._in_flight]  # the sender has those
                runs = await self._not_on_the_broker(candidates)
                if runs:
                    if total == 0:
                        log.info("publishing %d run(s) left unpublished", len(runs))
                    total += await self._publish(runs)
                if len(found) < page or not candidates:
                    return total

    async def _not_on_the_broker(self, runs: Sequence[RunRow]) -> list[RunRow]:
        """Mark the runs whose signal is on their readiness partition already; return the others."""
        if not runs or self._connection is None:
            return list(runs)
        await self._readiness_topics.ensure({run.dag_id for run in runs})
        places = []
        for run in runs:
            topic = self._topics.readiness(run.dag_id)
            places.append((run.run_id, (topic, await self._sender.partition_of(topic, _key(run)))))
        sent = await on_the_broker(self._connection, places)
        if not sent:
            return list(runs)
        async with translated(), self._engine.begin() as conn:
            await mark_published(conn, [run.id for run in runs if run.run_id in sent])
        self.found_sent += len(sent)
        log.info("%d unpublished run(s) had their signal on the broker already: marked, not sent again", len(sent))
        return [run for run in runs if run.run_id not in sent]

    async def _forever(self, wakeup: asyncio.Event, step: Callable[[], Awaitable[None]]) -> None:
        """`step` each time `wakeup` is set; after a failure (which the step logged and put back), again after
        a back-off."""
        backoff = self._retry.backoff()
        while True:
            await wakeup.wait()
            wakeup.clear()
            self._busy += 1
            try:
                await step()
            except Exception:
                await backoff.sleep()
                wakeup.set()
                continue
            finally:
                self._busy -= 1
            backoff.reset()
            if not self._backlog and not self._acked and not self._busy:
                self._idle.set()

    async def _send_submitted(self) -> None:
        runs, self._backlog = self._backlog, []
        self._room.set()
        try:
            async with self._lock:
                await self._send(runs)
        except Exception as error:  # kept in order at the front; they are in the database anyway
            self._refusals.noted(SENDING, error)
            log.warning("publishing %d readiness signal(s) failed, retrying: %s", len(runs), error)
            self._backlog[:0] = runs
            raise
        self._refusals.noted(SENDING, None)
        self._acked.extend(run.id for run in runs)
        self._marking.set()

    async def _mark_acked(self) -> None:
        """Mark acknowledged runs published, everything acknowledged so far in one statement."""
        ids, self._acked = self._acked, []
        try:
            async with translated(), self._engine.begin() as conn:
                await mark_published(conn, ids)
        except Exception as error:  # signalled already; a restart would only signal them again
            log.warning("marking %d run(s) published failed, retrying: %s", len(ids), error)
            self._acked[:0] = ids
            raise
        self._in_flight.difference_update(ids)

    async def _publish(self, runs: Sequence[RunRow]) -> int:
        """Whole record batches per partition, in run order; every ack, then the `published` flag."""
        await self._send(runs)
        async with translated(), self._engine.begin() as conn:
            await mark_published(conn, [run.id for run in runs])
        return len(runs)

    async def _send(self, runs: Sequence[RunRow]) -> None:
        dags = {run.dag_id for run in runs}
        await self._readiness_topics.ensure(dags)
        topic_of = {dag_id: self._topics.readiness(dag_id) for dag_id in dags}
        sender, times = self._sender, IsoTimes()
        try:
            for run in sorted(runs, key=lambda r: r.id):
                topic = topic_of[run.dag_id]
                key = _key(run)
                headers = self.signal_headers(run) if self._traces else ()
                sender.put(topic, await sender.partition_of(topic, key), key, signal_json(run, times), headers)
        except BaseException:
            sender.discard_open()
            raise
        topics = tuple(sorted(topic_of.values()))
        refusals = naming_refusals(self._connection, "Write", topics=topics) if self._connection else None
        with refusals or contextlib.nullcontext():
            await wait_all(await sender.send_open())
        self.published += len(runs)
        if self._metrics is not None:
            self._metrics.published(runs)


def traced_events(records: Iterable[ConsumedRecord]) -> dict[int, Context]:
    """The trace context of each asset event record that carries one, by event id (only those are read again)."""
    traces: dict[int, Context] = {}
    for record in records:
        context = context_of(getattr(record, "headers", None))
        if context is not None:
            with contextlib.suppress(ValidationError):
                traces[read_event(record.value).event_id] = context
    return traces


def _key(run: RunRow) -> bytes:
    return (run.partition_key or "").encode()


async def on_the_broker(connection: KafkaConnection, runs: Iterable[tuple[str, tuple[str, int]]], *,
                        margin: int = 100, timeout_ms: int = 10_000) -> set[str]:
    """The run ids among `(run id, (readiness topic, partition))` whose signal is among the last records of its
    partition. Without Read on a readiness topic: `KafkaAccessDenied` naming it.

    For n unpublished runs on a partition, the last `2n + margin` records are read. The publisher sends in run
    order and marks in send order, so every record after the last marked run's signal belongs to an unpublished
    run: with one publisher per topic, the last n records are enough. A signal further back (other schedulers
    writing the same topic meanwhile) is not found, and its run is sent again: a repeat carries the same run id.
    """
    wanted: dict[tuple[str, int], set[str]] = {}
    for run_id, place in runs:
        wanted.setdefault(place, set()).add(run_id)
    if not wanted:
        return set()
    async with started(AIOKafkaConsumer(**connection.client_kwargs(), group_id=None,
                                        enable_auto_commit=False)) as consumer:
        with naming_refusals(connection, "Read", topics=tuple(sorted({topic for topic, _ in wanted}))):
            parts = {place: TopicPartition(*place) for place in wanted}
            consumer.assign(list(parts.values()))
            ends = await consumer.end_offsets(list(parts.values()))
            begins = await consumer.beginning_offsets(list(parts.values()))
            remaining: dict[TopicPartition, int] = {}
            for place, tp in parts.items():
                start = max(begins[tp], ends[tp] - 2 * len(wanted[place]) - margin)
                if start < ends[tp]:
                    consumer.seek(tp, start)
                    remaining[tp] = ends[tp]
            found: set[str] = set()
            idle_ms = 0
            while remaining and idle_ms < timeout_ms:  # each partition up to its end offset
                batches = await consumer.getmany(*remaining, timeout_ms=200)
                idle_ms = 0 if batches else idle_ms + 200
                for tp, records in batches.items():
                    ids = wanted[(tp.topic, tp.partition)]
                    found.update(sent for record in records if (sent := _run_id(record.value)) in ids)
                for tp in list(remaining):
                    if await consumer.position(tp) >= remaining[tp]:
                        del remaining[tp]
            return found


def _run_id(value: bytes | None) -> str | None:
    try:
        found = json.loads(value) if value else None
    except ValueError:
        return None
    return found.get("run_id") if isinstance(found, dict) else None
