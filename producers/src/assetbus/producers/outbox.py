"""The outbox: the emitter's lingering front of the toolkit's `BatchSender`.

`put()` is synchronous and cheap (it appends to the open record batch of the key's partition); one
sender task hands over whatever is open. Batching adapts to the load: when no batch is on its way
to the broker, a record is handed over at once (a lone emission does not wait); while one is in
flight, new records keep filling the next batch until it is full, the one in flight is
acknowledged, or `linger` has passed, whichever comes first. So a burst fills batches and a
quiet emitter never waits.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer

from assetbus.producers.kafka.periodic import cancel_and_wait
from assetbus.producers.kafka.sender import BatchSender, Delivery

log = logging.getLogger("assetbus.emitter")

DeliveryFailed = Callable[[Sequence[Any], BaseException], None]


class Outbox:
    """Batches for one topic. `put()` is synchronous and cheap; `flush()` waits for the broker."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, partitions: list[int], *, linger_s: float,
                 on_failure: DeliveryFailed) -> None:
        self.sender = BatchSender(producer)
        self.sender.know_partitions(topic, partitions)
        self._topic = topic
        self._linger_s = linger_s
        self._on_failure = on_failure
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="assetbus-outbox")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def put(self, key: bytes, value: bytes, tag: Any, headers: Sequence[tuple[str, bytes]] = ()) -> None:
        """Append one record; `tag` is handed to `on_failure` if its batch cannot be delivered."""
        self.sender.put(self._topic, self.sender.partition_known(self._topic, key), key, value, headers, tag)
        self._wake.set()

    async def flush(self) -> None:
        """Hand over everything open now and wait until the broker acknowledged every batch."""
        await self._send_all()
        if self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._linger_s and self._in_flight and not self.sender.has_full_batches:
                # a batch is on its way: fill the next one until that one is acknowledged (or linger)
                await asyncio.wait(self._in_flight, timeout=self._linger_s, return_when=asyncio.FIRST_COMPLETED)
            await self._send_all()

    async def _send_all(self) -> None:
        async with self._lock:
            for delivery in await self.sender.send_open(on_refused=self._refused):
                self._in_flight.add(delivery.future)
                delivery.future.add_done_callback(functools.partial(self._delivered, delivery))

    def _refused(self, tags: list[Any], error: BaseException) -> None:  # the producer is closed or timed out
        log.warning("could not hand a batch of %d to Kafka: %s", len(tags), error)
        self._on_failure(tags, error)

    def _delivered(self, delivery: Delivery, done: asyncio.Future[Any]) -> None:
        self._in_flight.discard(done)
        error = None if done.cancelled() else done.exception()
        if done.cancelled() or error is not None:
            log.warning("Kafka did not take a batch of %d: %s", len(delivery.tags), error or "cancelled")
            self._on_failure(delivery.tags, error or asyncio.CancelledError())
