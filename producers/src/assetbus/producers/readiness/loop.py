"""The subscriber's consumer loop: fetch a batch, hand it over, then commit exactly that batch's offsets.

The services' shell lives in the server distribution; this is the small SDK-side loop with the same
rules, on aiokafka alone:

- never auto-commit: a batch's offsets (`last offset + 1` per partition) are committed only after its
  handler returned, and only if no rebalance happened since it was fetched (otherwise the partition's
  new owner redelivers it, and the ledger's claim skips the runs that finished);
- a batch whose handler raised is rewound (each still-assigned partition seeks back to its first
  record) and fetched again after a back-off, unless the error is `LedgerRefused`, which stops the loop
  (`run_forever` re-raises it);
- on a rebalance, the batch in flight gets `revoke_wait_s` to finish and commit before its partitions go;
- `stop()` lets the batch in flight finish (up to `drain_timeout_s`), then leaves the group.

A process killed in the middle of a batch commits nothing of it: its signals come again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from itertools import chain
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError

from assetbus.producers.errors import NotStarted
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.readiness.ledger import LedgerRefused

BatchHandler = Callable[[Sequence[Any]], Awaitable[None]]
"""Handles one batch of aiokafka `ConsumerRecord`s (in offset order per partition); raise to redeliver it."""


class LoopEvents:
    """What the loop reports (no-ops here; a metrics adapter overrides them)."""

    def rebalanced(self) -> None:
        return None

    def commit_failed(self) -> None:
        return None

    def lag(self, records: int) -> None:
        """Signals on the assigned partitions not yet handled and committed (after each commit)."""
        return None


class SignalLoop(ConsumerRebalanceListener):  # type: ignore[misc]
    """One consumer in a group around one batch handler. `await start()`, `await stop()`."""

    def __init__(self, consumer_kwargs: dict[str, Any], topic: str, handler: BatchHandler, *, max_records: int,
                 log: logging.Logger, name: str, events: LoopEvents | None = None, batch_timeout_ms: int = 500,
                 revoke_wait_s: float = 15.0, drain_timeout_s: float = 10.0, retry: RetryPolicy | None = None) -> None:
        self._kwargs = {**consumer_kwargs, "enable_auto_commit": False}
        self._topic = topic
        self._handler = handler
        self._max_records = max_records
        self._log = log
        self._name = name
        self._events = events or LoopEvents()
        self._batch_timeout_ms = batch_timeout_ms
        self._revoke_wait_s = revoke_wait_s
        self._drain_timeout_s = drain_timeout_s
        self._retry = retry or RetryPolicy()
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.generation = 0
        self.batches = 0
        self._done: dict[TopicPartition, int] = {}

    @property
    def consumer(self) -> AIOKafkaConsumer | None:
        return self._consumer

    async def start(self) -> None:
        consumer = AIOKafkaConsumer(**self._kwargs)
        consumer.subscribe([self._topic], listener=self)
        try:
            await consumer.start()
        except BaseException:
            await consumer.stop()
            raise
        self._consumer = consumer
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        self._stopping.set()
        try:
            if self._task is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), self._drain_timeout_s)
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
                self._task = None
        finally:
            if self._consumer is not None:
                consumer, self._consumer = self._consumer, None
                await consumer.stop()

    async def wait_assigned(self, timeout_s: float = 30.0) -> None:
        """Wait until the group has given this consumer partitions (re-raises if the loop died)."""
        deadline = time.monotonic() + timeout_s
        while self._consumer is None or not self._consumer.assignment():
            if self._task is not None and self._task.done():
                self._task.result()
            if time.monotonic() > deadline:
                raise TimeoutError(f"no partitions of {self._topic} assigned within {timeout_s}s")
            await asyncio.sleep(0.05)

    async def run_forever(self) -> None:
        """Block while the loop runs (re-raises if it died)."""
        if self._task is None:
            raise NotStarted("the readiness subscriber")
        await asyncio.shield(self._task)

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if revoked and not self._idle.is_set():
            try:
                await asyncio.wait_for(self._idle.wait(), self._revoke_wait_s)
            except asyncio.TimeoutError:
                self._log.warning("rebalance: the batch in flight did not finish in time; it will be redelivered")

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.generation += 1
        self._done = {}
        self._events.rebalanced()

    async def _run(self) -> None:
        assert self._consumer is not None
        consumer = self._consumer
        backoff = self._retry.backoff()
        while not self._stopping.is_set():
            try:
                fetched = await consumer.getmany(timeout_ms=self._batch_timeout_ms, max_records=self._max_records)
            except KafkaError as error:
                self._log.warning("fetch failed: %s: %s", type(error).__name__, error)
                await backoff.sleep()
                continue
            records = list(chain.from_iterable(fetched.values()))
            if not records or self._stopping.is_set():  # fetched while stopping: redelivered
                continue
            generation = self.generation
            self._idle.clear()
            try:
                try:
                    await self._handler(records)
                except LedgerRefused:
                    raise
                except Exception:
                    self._log.exception("batch failed; rewound for redelivery")
                    self._rewind(consumer, records, generation)
                    await backoff.sleep()
                    continue
                await self._commit(consumer, records, generation)
                backoff.reset()
            finally:
                self._idle.set()

    async def _commit(self, consumer: AIOKafkaConsumer, records: Sequence[Any], generation: int) -> None:
        if generation != self.generation:
            self._events.commit_failed()
            self._log.warning("rebalance while the batch was in flight: not committing it; it will be redelivered")
            return
        assigned = consumer.assignment()
        offsets = {tp: last + 1 for tp, (_, last) in _ranges(records).items() if tp in assigned}
        if not offsets:
            return
        try:
            await consumer.commit(offsets)
        except (KafkaError, IllegalStateError) as error:
            self._events.commit_failed()
            self._log.warning("offset commit failed (%s); the batch will be redelivered", error)
            return
        self.batches += 1
        self._done.update(offsets)
        self._events.lag(sum(max(0, (consumer.highwater(tp) or 0) - done) for tp, done in self._done.items()
                             if tp in assigned))

    def _rewind(self, consumer: AIOKafkaConsumer, records: Sequence[Any], generation: int) -> None:
        if generation != self.generation:
            return  # a rebalance reset the positions to the committed offsets already
        assigned = consumer.assignment()
        for tp, (first, _) in _ranges(records).items():
            if tp in assigned:
                with contextlib.suppress(IllegalStateError):
                    consumer.seek(tp, first)


def _ranges(records: Sequence[Any]) -> dict[TopicPartition, tuple[int, int]]:
    """(first, last) offset of each partition in a batch."""
    ranges: dict[TopicPartition, tuple[int, int]] = {}
    for record in records:
        tp = TopicPartition(record.topic, record.partition)
        low, high = ranges.get(tp, (record.offset, record.offset))
        ranges[tp] = (min(low, record.offset), max(high, record.offset))
    return ranges

