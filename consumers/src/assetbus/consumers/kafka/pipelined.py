"""The service shell with one batch prepared while the one before it is handled.

A batch's handling is mostly waits on the database; its preparation (decoding records, routing
them) is CPU that does not depend on the batch before it. `PipelinedShell` prepares batch N+1
while batch N awaits its statements, so the rate is closer to 1 / max(CPU, SQL) than to
1 / (CPU + SQL). Handling stays strictly one batch after the other, in fetch order, and every
guarantee of `ServiceShell` holds:

- batch N+1 is held (`Offsets.hold`) from its fetch, so a rebalance waits for both batches, and a
  batch fetched under an older generation is never committed;
- if batch N fails, batch N+1 is not handled: both are rewound (each partition to the first
  offset of either) and fetched again after the back-off;
- if the preparation of a batch raises, that batch is rewound and retried like a failed handler;
- on `stop()`, a prepared batch that was not handled yet is released: not committed, redelivered.

Only a batch of at least `pipeline_from` records (default: half of `max_records`) is pipelined: a
smaller one means the shell keeps up, and fetching the next batch right away would take a sliver of
records and leave what arrives meanwhile for the batch after it (more batches, more latency). After
a small batch the shell waits for it, as `ServiceShell` does.

The preparation is a coroutine: it should yield (`await asyncio.sleep(0)`) every few hundred
records, so the batch in flight moves on as soon as its statement returns.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from assetbus.consumers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.retry import Backoff

__all__ = ["PipelinedShell"]

Prepared = TypeVar("Prepared")


class PipelinedShell(ServiceShell, Generic[Prepared]):
    """A `ServiceShell` whose handler takes what `prepare` made of the batch's records."""

    def __init__(self, connection: KafkaConnection, settings: ConsumerSettings, *,
                 prepare: Callable[[list[Any]], Awaitable[Prepared]], handle: Callable[[Prepared], Awaitable[None]],
                 pipeline_from: int | None = None, **kwargs: Any) -> None:
        super().__init__(connection, settings, self._unused, **kwargs)
        self._pipeline_from = max(1, settings.max_records // 2 if pipeline_from is None else pipeline_from)
        self._prepare = prepare
        self._handle_prepared = handle

    @staticmethod
    async def _unused(records: Any) -> None:
        raise AssertionError("PipelinedShell handles prepared batches only")

    async def _run(self) -> None:
        assert self._consumer is not None
        consumer = self._consumer
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
                await asyncio.sleep(0)  # the batch in flight sends its next statement before this one is prepared
                prepared: Prepared | None = None
                failure: Exception | None = None
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
                in_flight = (asyncio.create_task(self._handle(records, generation, self._handle_prepared(prepared)),
                                                 name=f"{self._name}-batch"), records)
                if len(records) < self._pipeline_from:  # keeping up: the next fetch waits, and takes all
                    await _settled(await in_flight[0], backoff)  # that arrives meanwhile, not a sliver now
                    in_flight = None
            if in_flight is not None:
                await in_flight[0]
        finally:
            if in_flight is not None and not in_flight[0].done():
                in_flight[0].cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await in_flight[0]


async def _settled(ok: bool, backoff: Backoff) -> None:
    """After a batch: a success resets the back-off, a failure waits it out before the next fetch."""
    if ok:
        backoff.reset()
    else:
        await backoff.sleep()
