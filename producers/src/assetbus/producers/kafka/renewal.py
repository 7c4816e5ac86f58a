"""An idempotent producer replaced by a new one (a new producer id) after the broker refused one of its batches.

The broker refusing a batch (a missing ACL: TopicAuthorizationFailed) leaves aiokafka's idempotent producer with
its sequence numbers for that partition out of order for good: the refused batch's sequence is spent, so every
later send to the partition fails with OutOfOrderSequenceNumber, even once the ACL is restored. `RenewableProducer`
notes such a failure (`note`, or `watch` on a send's future) and `renewed()` starts a new producer in place of the
broken one before the next send; while the ACL is still missing that start may be refused too, and raises (the
next `renewed()` tries again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    OutOfOrderSequenceNumber,
    TopicAuthorizationFailedError,
)

__all__ = ["RenewableProducer", "breaks_sequence"]


def breaks_sequence(error: BaseException) -> bool:
    """Whether a send that failed with `error` leaves the idempotent producer's sequence broken."""
    return isinstance(error, (OutOfOrderSequenceNumber, TopicAuthorizationFailedError,
                              ClusterAuthorizationFailedError))


class RenewableProducer:
    """Owns the current producer (`producer`), made by `create` and started by `start` (default: `start()`)."""

    def __init__(self, create: Callable[[], AIOKafkaProducer], *,
                 start: Callable[[AIOKafkaProducer], Awaitable[None]] = lambda producer: producer.start(),
                 on_renewed: Callable[[AIOKafkaProducer], None] | None = None) -> None:
        self._create = create
        self._start = start
        self._on_renewed = on_renewed
        self.producer = create()
        self.broken = False
        """A send failed so that the producer's sequence is broken: `renewed()` replaces it."""
        self._renewing = asyncio.Lock()

    async def start(self) -> None:
        await self._start(self.producer)

    async def stop(self) -> None:
        await self.producer.stop()

    def note(self, error: BaseException | None) -> None:
        """A send's outcome: one that breaks the sequence marks the producer for renewal."""
        if error is not None and breaks_sequence(error):
            self.broken = True

    def watch(self, future: asyncio.Future[Any]) -> None:
        """`note` the outcome of a send's future when it settles."""
        future.add_done_callback(self._settled)

    def _settled(self, future: asyncio.Future[Any]) -> None:
        if not future.cancelled():
            self.note(future.exception())

    async def renewed(self) -> AIOKafkaProducer:
        """The producer to send with: a new, started one in place of a broken one (raises if it cannot start)."""
        if not self.broken:
            return self.producer
        async with self._renewing:
            if self.broken:
                old, self.producer = self.producer, self._create()
                await old.stop()
                try:
                    await self._start(self.producer)
                except BaseException:
                    with contextlib.suppress(Exception):
                        await self.producer.stop()
                    raise
                self.broken = False
                if self._on_renewed is not None:
                    self._on_renewed(self.producer)
        return self.producer
