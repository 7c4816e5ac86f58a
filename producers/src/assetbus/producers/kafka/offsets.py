"""Offsets that follow the handler: commit a batch's own offsets after it is done, rewind it if it failed.

Why not the consumer's plain `commit()` (or FastStream's `message.ack()` / `nack()`, which wrap it):
it commits the consumer's *positions* of every assigned partition, which after a rebalance in the
middle of a batch are not this batch's offsets, and `nack()` stops seeking at the first partition
that was revoked meanwhile. Here:

- a batch commits exactly `last offset + 1` of each of its partitions, and only if no rebalance
  happened since it was fetched (otherwise the new owner redelivers it; the dedupe key absorbs it);
- a failed batch rewinds each of its partitions that is still assigned (a revoked one restarts from
  its committed offset at its new owner anyway);
- on a rebalance, the batch in flight gets `revoke_wait_s` to finish and commit before its
  partitions are given up, so a clean rebalance redelivers nothing.

A commit that fails (the group moved on) never loses data: the batch is stored and receipted, and
the records are redelivered and answered as duplicates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError

from assetbus.producers.kafka.types import ConsumedRecord

__all__ = ["OffsetCounters", "OffsetMetrics", "Offsets", "Tallies", "batch_ranges"]


class _Counter(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class _Gauge(Protocol):
    def set(self, value: float) -> None: ...


class OffsetMetrics(Protocol):
    """What `Offsets` counts (the persister passes its Prometheus metrics)."""

    @property
    def rebalances(self) -> _Counter: ...
    @property
    def commit_failures(self) -> _Counter: ...
    @property
    def consumer_lag(self) -> _Gauge: ...


class _Tally:
    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def set(self, value: float) -> None:
        self.value = value


@dataclass(frozen=True, slots=True)
class OffsetCounters:
    """`OffsetMetrics` from three metric objects (labelled Prometheus children, say: one set per DAG)."""

    rebalances: _Counter
    commit_failures: _Counter
    consumer_lag: _Gauge


class Tallies(OffsetCounters):
    """`OffsetMetrics` as plain numbers, for services without a metrics endpoint."""

    def __init__(self) -> None:
        super().__init__(_Tally(), _Tally(), _Tally())


def batch_ranges(records: Sequence[ConsumedRecord]) -> dict[TopicPartition, tuple[int, int]]:
    """(first offset, last offset) of each partition in the batch."""
    ranges: dict[tuple[str, int], list[int]] = {}
    for record in records:
        key = (record.topic, record.partition)
        seen = ranges.get(key)
        offset = record.offset
        if seen is None:
            ranges[key] = [offset, offset]
        elif offset < seen[0]:
            seen[0] = offset
        elif offset > seen[1]:
            seen[1] = offset
    return {TopicPartition(topic, partition): (low, high) for (topic, partition), (low, high) in ranges.items()}


class Offsets(ConsumerRebalanceListener):  # type: ignore[misc]
    """Commits and rewinds for one consumer; also its rebalance listener."""

    def __init__(self, metrics: OffsetMetrics | None, revoke_wait_s: float, *,
                 log: logging.Logger | None = None) -> None:
        self.generation = 0
        """Bumped on every assignment: a batch fetched under another generation is not committed by us."""
        self.consumer: AIOKafkaConsumer | None = None
        self._metrics: OffsetMetrics = metrics if metrics is not None else Tallies()
        self._log = log or logging.getLogger("assetbus.kafka")
        self._revoke_wait_s = revoke_wait_s
        self._idle = asyncio.Event()
        self._idle.set()
        self._holds = 0
        self._done: dict[TopicPartition, int] = {}

    def hold(self) -> int:
        """Mark work on a batch (handling it, or committing it) as in flight; returns the generation.

        Holds nest: a rebalance waits until every hold is released, so a batch handed from its
        handler to a background commit keeps its partitions until its offsets are committed."""
        self._holds += 1
        self._idle.clear()
        return self.generation

    async def idle(self) -> None:
        """Wait until no batch is being handled or committed."""
        await self._idle.wait()

    def release(self) -> None:
        self._holds -= 1
        if self._holds <= 0:
            self._holds = 0
            self._idle.set()

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if not revoked or self._idle.is_set():
            return
        self._log.info("rebalance: letting the batch in flight finish", extra={"revoked": len(revoked)})
        try:
            await asyncio.wait_for(self._idle.wait(), self._revoke_wait_s)
        except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
            self._log.warning("rebalance: the batch in flight did not finish in time; it will be redelivered",
                        extra={"waited_s": self._revoke_wait_s})

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.generation += 1
        self._done = {}
        self._metrics.rebalances.inc()
        self._log.info("partitions assigned", extra={"generation": self.generation,
                                                "partitions": sorted(f"{tp.topic}:{tp.partition}" for tp in assigned)})

    async def commit(self, records: Sequence[ConsumedRecord], generation: int) -> bool:
        """Commit the batch's own offsets. False (and nothing committed) if the group moved on."""
        consumer = self.consumer
        if consumer is None:
            return False
        if generation != self.generation:
            self._metrics.commit_failures.inc()
            self._log.warning("rebalance while the batch was in flight: not committing it; it will be redelivered",
                        extra={"records": len(records)})
            return False
        assigned = consumer.assignment()
        offsets = {tp: last + 1 for tp, (_, last) in batch_ranges(records).items() if tp in assigned}
        if not offsets:
            return False
        try:
            await consumer.commit(offsets)
        except (KafkaError, IllegalStateError) as error:
            self._metrics.commit_failures.inc()
            self._log.warning("offset commit failed; the batch will be redelivered and answered as duplicates",
                        extra={"error": f"{type(error).__name__}: {error}", "records": len(records)})
            return False
        self._done.update(offsets)
        return True

    def rewind(self, records: Sequence[ConsumedRecord], generation: int) -> None:
        """Seek every still-assigned partition of a failed batch back to its first record."""
        consumer = self.consumer
        if consumer is None or generation != self.generation:
            return  # a rebalance reset every position to the committed offsets already
        assigned = consumer.assignment()
        for tp, (first, _) in batch_ranges(records).items():
            if tp in assigned:
                try:
                    consumer.seek(tp, first)
                except IllegalStateError:
                    continue  # revoked meanwhile: its new owner starts from the committed offset

    def update_lag(self) -> None:
        """Records behind the broker's end on the assigned partitions, as of the last fetch."""
        consumer = self.consumer
        if consumer is None:
            return
        lag = 0
        for tp in consumer.assignment():
            end, done = consumer.highwater(tp), self._done.get(tp)
            if end is not None and done is not None:
                lag += max(0, end - done)
        self._metrics.consumer_lag.set(lag)
