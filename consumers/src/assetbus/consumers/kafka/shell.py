"""The one service shell: consume a batch, hand it to an async handler, commit exactly what it handled.

Used by the persister, the scheduler and the readiness subscriber SDK. Per batch (up to
`max_records`, from one `getmany`): the handler runs; if it returns, the batch's own offsets are
committed (`Offsets`: per partition, only if no rebalance happened meanwhile); if it raises, the
batch's partitions are rewound and the shell waits per its retry policy (jittered back-off) before
fetching again. Nothing is ever auto-committed. On a rebalance the batch in flight gets
`revoke_wait_s` to finish. `stop()` lets the batch in flight finish (up to `drain_timeout_s`),
then leaves the group (up to `leave_timeout_s`: a coordinator that does not answer, e.g. one that is
moving after a broker restart, would hold the consumer's close for a whole request timeout; past the
bound the group drops the member after its session timeout, and nothing handled is lost, as every
handled batch has committed by then).

The commit is one round trip to the group coordinator. It runs in the background while the next
batch is fetched and handled, and commits exactly the offsets of the batch that was handled (never
the consumer's positions, which are already past the next batch). At most one commit is in flight:
the next batch's commit waits for it, so commits stay in order. A rebalance, `stop()` and
`batches` / `after_commit` all count a batch as done only once its commit has returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError, UnknownTopicOrPartitionError

from assetbus.consumers.errors import NotStarted
from assetbus.consumers.kafka.access import KafkaAccessDenied, access_denied
from assetbus.consumers.kafka.offsets import OffsetMetrics, Offsets
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.retry import Backoff, RetryPolicy, RetryTimeout, retry_until

__all__ = ["BatchHandler", "ConsumerSettings", "ServiceShell"]

BatchHandler = Callable[[Sequence[Any]], Awaitable[None]]
"""Handles one batch of aiokafka `ConsumerRecord`s (in offset order per partition); raise to redeliver it."""


@dataclass(frozen=True)
class ConsumerSettings:
    """The consumer-group knobs of one shell (the services' configs fill them in)."""

    topics: tuple[str, ...]
    group_id: str
    group_instance_id: str | None = None
    """Static membership (KIP-345): a restart within the session timeout keeps this member's partitions
    and causes no rebalance. Unique per process (e.g. the pod name of a StatefulSet)."""
    max_records: int = 1000
    batch_timeout_ms: int = 50
    """How long one fetch waits to fill a batch."""
    fetch_max_wait_ms: int = 50
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 10 * 60 * 1000
    rebalance_timeout_ms: int | None = None
    max_partition_fetch_bytes: int = 1024 * 1024
    auto_offset_reset: str = "earliest"
    revoke_wait_s: float = 15.0
    drain_timeout_s: float = 10.0
    """On `stop()`, how long the batch in flight may take to finish and commit."""
    leave_timeout_s: float = 5.0
    """On `stop()`, how long closing the consumer (leaving the group) may take."""
    topics_wait_s: float = 10.0
    """On `start()`, how long the subscribed topics may stay missing from the broker's metadata before the
    start fails (they are created by `assetbus migrate`)."""


class _NotListed(Exception):
    """Subscribed topics the broker's metadata does not list (yet)."""


class ServiceShell:
    """One consumer in a group around one handler. Explicit lifecycle: `await start()`, `await stop()`."""

    def __init__(self, connection: KafkaConnection, settings: ConsumerSettings, handler: BatchHandler, *,
                 retry: RetryPolicy | None = None, metrics: OffsetMetrics | None = None,
                 log: logging.Logger | None = None, on_failure: Callable[[BaseException], None] | None = None,
                 after_commit: Callable[[], None] | None = None, name: str = "assetbus-consumer") -> None:
        self.connection = connection
        self.settings = settings
        self.log = log or logging.getLogger("assetbus.kafka")
        self.offsets = Offsets(metrics, settings.revoke_wait_s, log=self.log)
        self.retry = retry or RetryPolicy()
        self.batches = 0
        self.failures = 0
        self._handler = handler
        self._on_failure = on_failure
        self._after_commit = after_commit
        self._name = name
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._committing: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.leaving: asyncio.Task[None] | None = None
        """A close that outlived `leave_timeout_s` on `stop()`, still finishing in the background."""

    def consumer_kwargs(self) -> dict[str, Any]:
        """The aiokafka consumer's arguments: never auto-commit."""
        s = self.settings
        kwargs: dict[str, Any] = {
            **self.connection.client_kwargs("consumer"), "group_id": s.group_id, "enable_auto_commit": False,
            "auto_offset_reset": s.auto_offset_reset, "fetch_max_wait_ms": s.fetch_max_wait_ms,
            "session_timeout_ms": s.session_timeout_ms, "heartbeat_interval_ms": s.heartbeat_interval_ms,
            "max_poll_interval_ms": s.max_poll_interval_ms, "max_partition_fetch_bytes": s.max_partition_fetch_bytes,
        }
        if s.rebalance_timeout_ms is not None:
            kwargs["rebalance_timeout_ms"] = s.rebalance_timeout_ms
        if s.group_instance_id is not None:
            kwargs["group_instance_id"] = s.group_instance_id
        return kwargs

    @property
    def consumer(self) -> AIOKafkaConsumer | None:
        return self._consumer

    async def start(self) -> None:
        if missing := await self._missing_topics():  # aiokafka's consumer would retry for its request timeout
            raise UnknownTopicOrPartitionError(
                f"the group {self.settings.group_id} subscribes to {', '.join(missing)}, which the broker has not "
                f"listed for {self.settings.topics_wait_s:.0f}s")
        consumer = AIOKafkaConsumer(**self.consumer_kwargs())
        consumer.subscribe(list(self.settings.topics), listener=self.offsets)
        try:
            await consumer.start()
        except KafkaError as error:
            await consumer.stop()
            raise self._denied(error) or error from error
        self._consumer = self.offsets.consumer = consumer
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def _missing_topics(self) -> list[str]:
        """The subscribed topics the broker's metadata has not listed within `topics_wait_s` (a topic created
        a moment ago reaches the brokers of a cluster one after the other). None when the broker cannot say
        now: the consumer's own start then reports what is wrong."""
        admin = AIOKafkaAdminClient(**self.connection.client_kwargs(), request_timeout_ms=10_000)
        missing: list[str] = []

        async def all_listed() -> None:
            listed = set(await admin.list_topics())
            missing[:] = [topic for topic in self.settings.topics if topic not in listed]
            if missing:
                raise _NotListed(", ".join(missing))

        try:
            await admin.start()
            await retry_until(all_listed, RetryPolicy(initial_s=0.1, max_s=1.0, timeout_s=self.settings.topics_wait_s),
                              what="the subscribed topics", retriable=lambda error: isinstance(error, _NotListed))
        except (RetryTimeout, TimeoutError):  # the wait is over (its last attempt may be cut short)
            return missing
        except KafkaError:
            return []
        finally:
            await admin.close()
        return []

    async def stop(self) -> None:
        """Let the batch in flight finish (up to `drain_timeout_s`), stop fetching, leave the group."""
        self._stopping.set()
        try:
            if self._task is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.offsets.idle(), self.settings.drain_timeout_s)
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
                self._task = None
            if self._committing is not None:  # still committing after the drain timeout: give up on it
                self._committing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._committing
                self._committing = None
        finally:
            if self._consumer is not None:
                await self._leave(self._consumer)
                self._consumer = self.offsets.consumer = None

    async def _leave(self, consumer: AIOKafkaConsumer) -> None:
        """Close the consumer, leaving the group, within `leave_timeout_s`. Past it the close goes on in the
        background (`leaving`: it ends with the request timeout at the latest, or when the process exits)."""
        started = time.monotonic()
        closing = asyncio.create_task(consumer.stop(), name=f"{self._name}-leave")
        done, _ = await asyncio.wait({closing}, timeout=self.settings.leave_timeout_s)
        if not done:
            self.leaving = closing
            self.log.warning("leaving the consumer group did not finish in time; the group drops this member "
                             "after its session timeout", extra={"waited_s": self.settings.leave_timeout_s,
                                                                 "group": self.settings.group_id})
            return
        closing.result()
        self.log.debug("left the consumer group", extra={"seconds": round(time.monotonic() - started, 3)})

    async def wait_assigned(self, timeout_s: float = 30.0) -> None:
        """Wait until the group has given this consumer partitions (re-raises if the loop died)."""
        async with asyncio.timeout(timeout_s):
            while self._consumer is None or not self._consumer.assignment():
                if self._task is not None and self._task.done():
                    self._task.result()
                await asyncio.sleep(0.05)

    async def run_forever(self) -> None:
        """Block while the loop runs (re-raises if it died)."""
        if self._task is None:
            raise NotStarted("the service shell")
        await asyncio.shield(self._task)

    async def until_signalled(self) -> None:
        """For `assetbus run ...`: block until SIGINT or SIGTERM (or until the loop died). Stop with `stop()`."""
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
        await self.until(stopping)

    async def until(self, stopping: asyncio.Event) -> None:
        """Block until `stopping` is set or the loop died (then re-raise its error). Stop with `stop()`."""
        if self._task is None:
            raise NotStarted("the service shell")
        waiter = asyncio.create_task(stopping.wait())
        try:
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
        if self._task.done() and not self._task.cancelled() and self._task.exception() is not None:
            raise self._task.exception()  # type: ignore[misc]

    async def _run(self) -> None:
        assert self._consumer is not None
        consumer = self._consumer
        backoff = self.retry.backoff()
        while not self._stopping.is_set():
            records = await self._fetch(consumer, backoff)
            if records is None:
                continue
            if self._stopping.is_set():  # fetched while stopping: not handled, not committed, redelivered
                break
            if await self._handle(records, self.offsets.hold(), self._handler(records)):
                backoff.reset()
            else:
                await backoff.sleep()

    async def _fetch(self, consumer: AIOKafkaConsumer, backoff: Backoff) -> list[Any] | None:
        """The next batch (each partition's records in offset order), or None if the fetch found none."""
        s = self.settings
        try:
            fetched = await consumer.getmany(timeout_ms=s.batch_timeout_ms, max_records=s.max_records)
        except KafkaError as error:  # e.g. an offset out of range without a reset policy
            if (denied := self._denied(error)) is not None:  # a missing ACL: retrying only repeats the refusal
                raise denied from error
            self.log.warning("fetch failed: %s: %s", type(error).__name__, error)
            await backoff.sleep()
            return None
        return list(chain.from_iterable(fetched.values())) if fetched else None

    def _denied(self, error: KafkaError) -> KafkaAccessDenied | None:
        return access_denied(error, self.connection, group_id=self.settings.group_id, topics=self.settings.topics)

    async def _handle(self, records: list[Any], generation: int, handling: Awaitable[None]) -> bool:
        """Await the handler's work on a held batch; on success hand the batch to a background commit
        (which keeps the hold), on failure rewind it. The hold is the caller's (`offsets.hold()`)."""
        handed_over = False
        try:
            try:
                await handling
            except Exception as error:
                self._failed(records, generation, error)
                return False
            previous = self._committing
            if previous is not None and not previous.done():
                await asyncio.shield(previous)  # at most one commit in flight, in batch order
            self._committing = asyncio.create_task(self._commit(records, generation), name=f"{self._name}-commit")
            handed_over = True
            return True
        finally:
            if not handed_over:
                self.offsets.release()

    def _failed(self, records: list[Any], generation: int, error: Exception) -> None:
        """A batch that failed (its handler, or its preparation): rewound for redelivery, logged, counted."""
        self.failures += 1
        self.offsets.rewind(records, generation)
        self.log.error("batch failed; rewound for redelivery", exc_info=error, extra={"records": len(records)})
        if self._on_failure is not None:
            self._on_failure(error)

    async def _commit(self, records: list[Any], generation: int) -> None:
        """Commit the handled batch's own offsets (a failed commit is logged by `Offsets`: redelivered)."""
        try:
            await self.offsets.commit(records, generation)
            self.batches += 1
            if self._after_commit is not None:
                self._after_commit()
        finally:
            self.offsets.release()
