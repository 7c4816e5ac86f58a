"""The one consume → handle → commit shell: fetch a batch, hand it to an async handler, commit exactly what it handled.

Per batch (up to `max_records`, from one `getmany`): if the handler returns, the batch's own offsets are
committed (`Offsets`); if it raises, the batch's partitions are rewound and the shell waits per its retry
policy before fetching again. Nothing is ever auto-committed. On a rebalance the batch in flight gets
`revoke_wait_s` to finish. `stop()` lets the batch in flight finish (up to `drain_timeout_s`), then leaves
the group (up to `leave_timeout_s`, see `_leave`).

The commit is one round trip to the group coordinator. It runs in the background while the next
batch is fetched and handled, and commits exactly the offsets of the batch that was handled (never
the consumer's positions, which are already past the next batch). At most one commit is in flight:
the next batch's commit waits for it, so commits stay in order. A rebalance, `stop()` and
`batches` / `after_commit` all count a batch as done only once its commit has returned.

**The prepare stage.** With `prepare`, a batch's CPU work (decoding, routing) runs while the batch
before it awaits its statements, so the rate is closer to 1 / max(CPU, SQL) than to 1 / (CPU + SQL);
the handler then takes what `prepare` made. Handling stays strictly one batch after the other, in
fetch order, and every rule above holds: the next batch is held from its fetch (a rebalance waits for
both, and one fetched under an older generation is never committed); if a batch fails, the one
prepared behind it is not handled and both are rewound; a `prepare` that raises is a failed batch; on
`stop()` a prepared batch not yet handled is released, not committed. Only a batch of at least
`pipeline_from` records (default: half of `max_records`) is overlapped with the next fetch: a smaller
one means the shell keeps up, and fetching at once would take a sliver of what arrives meanwhile. A
`prepare` should yield (`await asyncio.sleep(0)`) every few hundred records.

**Errors that stop the loop.** A handler's error is a failed batch (rewound, retried after the
back-off), except one of `stop_on` (a refusal that retrying only repeats): it ends the loop, and
`run_forever` re-raises it. A missing ACL on fetch (`KafkaAccessDenied`) ends it too, recorded in
`refusals` (the service's `/readyz` names it) when given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from itertools import chain
from typing import Any, Generic, TypeVar, cast

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError, UnknownTopicOrPartitionError

from assetbus.producers.errors import NotStarted
from assetbus.producers.kafka.access import AccessRefusals, KafkaAccessDenied, access_denied
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.longpoll import adapt_long_poll
from assetbus.producers.kafka.offsets import OffsetMetrics, Offsets
from assetbus.producers.kafka.periodic import cancel_and_wait
from assetbus.producers.kafka.retry import Backoff, RetryPolicy
from assetbus.producers.kafka.topics import unlisted
from assetbus.producers.kafka.types import ConsumerSettings

__all__ = ["ConsumerSettings", "ServiceShell"]  # ConsumerSettings lives in `types` (no aiokafka import)

Prepared = TypeVar("Prepared")

_CONSUMER_KWARGS = ("group_id", "group_instance_id", "auto_offset_reset", "fetch_max_wait_ms", "session_timeout_ms",
                    "heartbeat_interval_ms", "max_poll_interval_ms", "rebalance_timeout_ms",
                    "max_partition_fetch_bytes")
"""The settings aiokafka's consumer takes under their own names (one left None: aiokafka's default)."""


class ServiceShell(Generic[Prepared]):
    """One consumer in a group around one handler. Explicit lifecycle: `await start()`, `await stop()`.

    `handler` takes the batch's records, or, with `prepare`, what `prepare` made of them."""

    def __init__(self, connection: KafkaConnection, settings: ConsumerSettings,
                 handler: Callable[[Prepared], Awaitable[None]], *,
                 prepare: Callable[[list[Any]], Awaitable[Prepared]] | None = None, pipeline_from: int | None = None,
                 stop_on: tuple[type[Exception], ...] = (), retry: RetryPolicy | None = None,
                 metrics: OffsetMetrics | None = None, log: logging.Logger | None = None,
                 on_failure: Callable[[BaseException], None] | None = None,
                 after_commit: Callable[[], None] | None = None, name: str = "assetbus-consumer",
                 refusals: AccessRefusals | None = None) -> None:
        self.connection = connection
        self.settings = settings
        self.log = log or logging.getLogger("assetbus.kafka")
        self.offsets = Offsets(metrics, settings.revoke_wait_s, log=self.log)
        self.retry = retry or RetryPolicy()
        self.batches = 0
        self.failures = 0
        self._handler = handler
        self._prepare = prepare
        no_overlap = settings.max_records + 1  # without a prepare stage there is nothing to overlap
        self._pipeline_from = no_overlap if prepare is None else max(
            1, settings.max_records // 2 if pipeline_from is None else pipeline_from)
        self._stop_on = stop_on
        self._on_failure = on_failure
        self._after_commit = after_commit
        self._name = name
        self.refusals = refusals
        self._task: asyncio.Task[None] | None = None
        self._committing: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.leaving: asyncio.Task[None] | None = None
        """A close that outlived `leave_timeout_s` on `stop()`, still finishing in the background."""

    def consumer_kwargs(self) -> dict[str, Any]:
        """The aiokafka consumer's arguments: never auto-commit."""
        passed = {name: value for name in _CONSUMER_KWARGS if (value := getattr(self.settings, name)) is not None}
        return {**self.connection.client_kwargs("consumer"), **passed, "enable_auto_commit": False}

    @property
    def consumer(self) -> AIOKafkaConsumer | None:
        return self.offsets.consumer

    async def start(self) -> None:
        try:  # aiokafka's consumer would retry a missing topic for its request timeout
            missing = await unlisted(self.connection, self.settings.topics, self.settings.topics_wait_s)
        except KafkaError:  # the broker cannot say now: the consumer's own start reports what is wrong
            missing = []
        if missing:
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
        adapt_long_poll(consumer)  # an idle consumer long-polls; a busy partition keeps fetch_max_wait_ms
        self.offsets.consumer = consumer
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        """Let the batch in flight finish (up to `drain_timeout_s`), stop fetching, leave the group."""
        self._stopping.set()
        try:
            if self._task is not None:
                with contextlib.suppress(asyncio.TimeoutError):  # the builtin one from Python 3.11 on
                    await asyncio.wait_for(self.offsets.idle(), self.settings.drain_timeout_s)
                self._task.cancel()
                try:
                    await self._task
                except asyncio.CancelledError:
                    pass
                except Exception as error:  # the loop died earlier: `run_forever` / `until` raised it already
                    self.log.debug("the consume loop had ended: %s: %s", type(error).__name__, error)
                self._task = None
            await cancel_and_wait(self._committing)  # still committing after the drain timeout: give up on it
            self._committing = None
        finally:
            if self.offsets.consumer is not None:
                await self._leave(self.offsets.consumer)
                self.offsets.consumer = None

    async def _leave(self, consumer: AIOKafkaConsumer) -> None:
        """Close the consumer, leaving the group, within `leave_timeout_s`: a coordinator that does not answer
        (one moving after a broker restart) would hold the close for a whole request timeout. Past the bound the
        close goes on in the background (`leaving`: it ends with the request timeout at the latest, or when the
        process exits) and the group drops the member after its session timeout; nothing handled is lost, as
        every handled batch has committed by then."""
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
        deadline = time.monotonic() + timeout_s
        while self.consumer is None or not self.consumer.assignment():
            if self._task is not None and self._task.done():
                self._task.result()
            if time.monotonic() > deadline:
                raise asyncio.TimeoutError(f"no partitions of {', '.join(self.settings.topics)} assigned within "
                                           f"{timeout_s}s")
            await asyncio.sleep(0.05)

    async def run_forever(self) -> None:
        """Block while the loop runs (re-raises if it died)."""
        if self._task is None:
            raise NotStarted("the service shell")
        await asyncio.shield(self._task)

    async def _run(self) -> None:
        consumer = self.offsets.consumer
        assert consumer is not None
        backoff = self.retry.backoff()
        in_flight: tuple[asyncio.Task[bool], list[Any]] | None = None
        try:
            while not self._stopping.is_set():
                records = await self._fetch(consumer, backoff)
                if records is None or self._stopping.is_set():
                    if in_flight is not None and in_flight[0].done():
                        await _settled(in_flight[0].result(), backoff)
                        in_flight = None
                    if records is not None:  # fetched while stopping: not handled, not committed, redelivered
                        break
                    continue
                generation = self.offsets.hold()
                prepared: Prepared | None = None
                failure: Exception | None = None
                if self._prepare is None:
                    prepared = cast(Prepared, records)
                else:
                    await asyncio.sleep(0)  # the batch in flight sends its next statement before this is prepared
                    try:
                        prepared = await self._prepare(records)
                    except Exception as error:
                        failure = error
                if in_flight is not None:
                    ok = await in_flight[0]
                    before, in_flight = in_flight[1], None
                    if not ok:  # the batch before failed and was rewound: this one goes back with it
                        self.offsets.rewind([*before, *records], generation)
                        self.offsets.release()
                    await _settled(ok, backoff)
                    if not ok:
                        continue
                if failure is not None:
                    self._failed(records, generation, failure)
                    self.offsets.release()
                    await backoff.sleep()
                    continue
                if self._stopping.is_set():
                    self.offsets.release()
                    break
                assert prepared is not None
                in_flight = (asyncio.create_task(self._handle(records, generation, self._handler(prepared)),
                                                 name=f"{self._name}-batch"), records)
                if len(records) < self._pipeline_from:  # keeping up: the next fetch waits, and takes all
                    await _settled(await in_flight[0], backoff)  # that arrives meanwhile, not a sliver now
                    in_flight = None
            if in_flight is not None:
                await in_flight[0]
        finally:
            if in_flight is not None and not in_flight[0].done():
                await cancel_and_wait(in_flight[0])

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
        denied = access_denied(error, self.connection, group_id=self.settings.group_id, topics=self.settings.topics)
        if denied is not None and self.refusals is not None:
            self.refusals.refused(f"consuming in group {self.settings.group_id}", denied)
        return denied

    async def _handle(self, records: list[Any], generation: int, handling: Awaitable[None]) -> bool:
        """Await the handler's work on a held batch; on success hand the batch to a background commit
        (which keeps the hold), on failure rewind it. The hold is the caller's (`offsets.hold()`)."""
        handed_over = False
        try:
            try:
                await handling
            except self._stop_on:
                raise  # ends the loop: retrying would only repeat the refusal
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


async def _settled(ok: bool, backoff: Backoff) -> None:
    """After a batch: a success resets the back-off, a failure waits it out before the next fetch."""
    if ok:
        backoff.reset()
    else:
        await backoff.sleep()
