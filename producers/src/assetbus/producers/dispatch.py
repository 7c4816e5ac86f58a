"""The dispatcher: commands out, receipts back, resends on timeout, bounded by `max_in_flight`.

One per process and broker (tokens vary per command, so one dispatcher serves every task and
callback of the process). No task per command: a command is a record in the outbox, a future
the receipt listener resolves, and an entry in the pending table. One sweeper task scans that
table a few times per timeout, resends the *same bytes* (same command id, same dedupe key) when
a receipt is late and fails the future with ReceiptTimeout after the last attempt. `max_in_flight`
slots bound the pending table: submitting waits while every slot holds a command without a
receipt, so memory stays bounded whatever the caller does.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer

from assetbus.producers.errors import EmitterClosed, EmitterError, ReceiptTimeout
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import TopicMissing
from assetbus.producers.kafka.periodic import cancel_and_wait
from assetbus.producers.kafka.producer import create_producer
from assetbus.producers.kafka.properties import check_compression
from assetbus.producers.kafka.replies import ReplyReader
from assetbus.producers.kafka.types import Lifecycle
from assetbus.producers.outbox import Outbox
from assetbus.producers.tracing import Header, span_headers
from assetbus.producers.wire import EmissionRequest, command_encoder
from assetbus.schemas import EmissionCommand, Receipt, Topics
from assetbus.schemas.codecs import CommandEncoder, encode_command

log = logging.getLogger("assetbus.emitter")


@dataclass(frozen=True)
class DispatchConfig:
    """How commands are sent and waited for. The defaults suit task code; the bench prints them."""

    receipt_timeout_s: float = 10.0
    attempts: int = 3
    max_in_flight: int = 10_000
    linger_ms: int = 5
    max_batch_bytes: int = 512 * 1024
    compression: str | None = None
    """Record batch compression (`gzip`, `snappy`, `lz4`, `zstd`; None: the connection's `compression.type`). A
    codec that is not installed is refused here, naming the package, not when the producer starts."""
    stop_flush_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.compression is not None:
            check_compression(self.compression, "compression")


@dataclass
class DispatchStats:
    resent: int = 0
    peak_in_flight: int = 0


@dataclass(slots=True)
class _Pending:
    command_id: uuid.UUID
    key: bytes
    payload: bytes
    future: asyncio.Future[Receipt]
    timeout_s: float
    attempts: int
    started: float
    deadline: float
    sends: int = 1
    last_error: str | None = None
    headers: tuple[Header, ...] = ()


class _Slots:
    """A counting semaphore for the in-flight bound, cheaper than asyncio.Semaphore on both paths.

    When it runs dry, a waiter is woken only once `resume_at` slots are free again, so a caller
    that is ahead of the receipts resumes for a run of submissions instead of being suspended
    and woken for every single receipt.
    """

    def __init__(self, size: int) -> None:
        self.free = size
        self.resume_at = max(1, min(256, size // 16))
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def take(self) -> None:
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # give() takes the slot for the waiter before waking it
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()
            raise

    def give(self) -> None:
        self.free += 1
        if not self._waiters or self.free < self.resume_at:
            return
        while self._waiters and self.free > 0:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.free -= 1
                waiter.set_result(None)


class Dispatcher(Lifecycle):
    """`async with Dispatcher(connection, topics) as d: future = await d.submit_request(token, request)`."""

    def __init__(self, connection: KafkaConnection, topics: Topics | None = None, *, producer_id: str | None = None,
                 config: DispatchConfig | None = None) -> None:
        self.topics = topics or Topics()
        self.config = config or DispatchConfig()
        self.producer_id = producer_id or f"emitter-{uuid.uuid4().hex}"
        self.receipts = ReplyReader(connection, self.topics.receipts, self.producer_id, on_receipt=self._on_receipt,
                                    waiting=lambda: bool(self._pending))
        self.stats = DispatchStats()
        self.connection = connection
        self._key_cache: dict[str, bytes] = {}
        self._encoders: dict[str, CommandEncoder] = {}
        self._pending: dict[uuid.UUID, _Pending] = {}
        self._slots: _Slots | None = None
        self._producer: AIOKafkaProducer | None = None
        self._outbox: Outbox | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False

    async def start(self) -> None:
        self._slots = _Slots(self.config.max_in_flight)
        try:
            await self.receipts.start()
        except TopicMissing as error:
            raise EmitterError(str(error)) from error
        producer = create_producer(self.connection, linger_ms=self.config.linger_ms,
                                   max_batch_bytes=self.config.max_batch_bytes, compression=self.config.compression)
        try:
            await producer.start()
            await producer.client._wait_on_metadata(self.topics.emissions)
            partitions = producer.client.cluster.partitions_for_topic(self.topics.emissions)
            if not partitions:
                raise EmitterError(f"topic {self.topics.emissions!r} does not exist; run `assetbus migrate` first")
        except BaseException:
            await producer.stop()
            await self.receipts.stop()
            raise
        self._producer = producer
        self._outbox = Outbox(producer, self.topics.emissions, list(partitions),
                              linger_s=self.config.linger_ms / 1000, on_failure=self._undelivered)
        self._outbox.start()
        self._sweeper = asyncio.create_task(self._sweep(), name="assetbus-receipt-deadlines")

    async def stop(self) -> None:
        """Send what was handed over (waiting for the broker), then stop; unresolved futures are cancelled."""
        self._closed = True
        try:
            if self._outbox is not None:
                await asyncio.wait_for(self._outbox.flush(), self.config.stop_flush_timeout_s)
        except Exception as error:  # TimeoutError included: stop anyway, but say so
            log.warning("stopping before every command reached Kafka: %s", error)
        finally:
            await cancel_and_wait(self._sweeper)
            if self._outbox is not None:
                await self._outbox.stop()
            for entry in list(self._pending.values()):
                self._finish(entry)
                entry.future.cancel()
            try:
                if self._producer is not None:
                    await self._producer.stop()
            finally:
                await self.receipts.stop()

    @property
    def batches_sent(self) -> int:
        """Record batches handed to Kafka so far."""
        return self._outbox.sender.batches_sent if self._outbox is not None else 0

    def encoder(self, token: str) -> CommandEncoder:
        encoder = self._encoders.get(token)
        if encoder is None:
            if len(self._encoders) >= 256:  # tokens come and go with tasks; keep the cache small
                self._encoders.pop(next(iter(self._encoders)))
            encoder = self._encoders[token] = command_encoder(self.producer_id, self.topics.receipts, token)
        return encoder

    async def submit_request(self, token: str, request: EmissionRequest) -> asyncio.Future[Receipt]:
        """Send a checked request as `token`'s command; the future resolves with its receipt."""
        payload = self.encoder(token).encode(request)
        return await self.submit_encoded(request.command_id, request.asset.name, payload,
                                         timeout_s=request.timeout_s, attempts=request.attempts)

    async def submit(self, command: EmissionCommand) -> asyncio.Future[Receipt]:
        """Send a command built elsewhere; the future resolves with its receipt."""
        return await self.submit_encoded(command.command_id, command.asset.name, encode_command(command))

    async def submit_encoded(self, command_id: uuid.UUID, asset_name: str, payload: bytes, *,
                             timeout_s: float | None = None, attempts: int | None = None) -> asyncio.Future[Receipt]:
        """Hand over one command; waits (backpressure) while `max_in_flight` commands have no receipt."""
        slots, outbox = self._slots, self._outbox
        if self._closed or slots is None or outbox is None:
            raise EmitterClosed("the emitter is not running (call start() first, or it was stopped)")
        existing = self._pending.get(command_id)
        if existing is not None:  # the same command twice: one send, one future
            return existing.future
        await slots.take()
        if self._closed:
            slots.give()
            raise EmitterClosed("the emitter was stopped while waiting for room")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Receipt] = loop.create_future()
        key = self._key_cache.get(asset_name)
        if key is None:
            key = self._key_cache[asset_name] = asset_name.encode()
        now = loop.time()
        timeout = timeout_s or self.config.receipt_timeout_s
        entry = _Pending(command_id, key, payload, future, timeout, attempts or self.config.attempts, now,
                         now + timeout, headers=span_headers("assetbus emit"))
        pending = self._pending
        pending[command_id] = entry
        stats = self.stats
        if len(pending) > stats.peak_in_flight:
            stats.peak_in_flight = len(pending)
        outbox.put(key, payload, entry, entry.headers)
        if outbox.sender.has_full_batches:
            await asyncio.sleep(0)  # let the outbox hand a full batch to Kafka before filling the next
        return future

    async def send(self, command: EmissionCommand) -> Receipt:
        """Send `command` and wait for its receipt (resending the same command on timeouts)."""
        return await (await self.submit(command))

    async def flush(self) -> None:
        """Wait until every command handed over so far is on the broker (not for receipts)."""
        if self._outbox is not None:
            await self._outbox.flush()

    async def drain(self, timeout_s: float | None = None) -> None:
        """Wait until every command handed over so far has its receipt (or failed)."""
        futures = [entry.future for entry in self._pending.values()]
        if futures:
            await asyncio.wait(futures, timeout=timeout_s)

    def _finish(self, entry: _Pending) -> None:
        """Take the command out of the pending table and free its slot (exactly once)."""
        if self._pending.pop(entry.command_id, None) is entry and self._slots is not None:
            self._slots.give()

    def _on_receipt(self, receipt: Receipt) -> None:
        entry = self._pending.get(receipt.correlation_id)
        if entry is None:
            return  # a late receipt of a command already answered (a resend's twin), or another process's
        self._finish(entry)
        if not entry.future.done():
            entry.future.set_result(receipt)

    def _undelivered(self, tags: Sequence[Any], error: BaseException) -> None:
        """A batch did not reach the broker: its commands are resent at their deadline."""
        message = f"{type(error).__name__}: {error}"
        for entry in tags:
            entry.last_error = message

    async def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        tick = min(0.5, max(0.02, self.config.receipt_timeout_s / 10))
        while True:
            await asyncio.sleep(tick)
            now = loop.time()
            for entry in [e for e in self._pending.values() if e.deadline <= now or e.future.done()]:
                if entry.future.done():  # the caller cancelled its future: stop tracking it
                    self._finish(entry)
                elif entry.sends < entry.attempts:
                    entry.sends += 1
                    entry.deadline = now + entry.timeout_s
                    self.stats.resent += 1
                    assert self._outbox is not None
                    self._outbox.put(entry.key, entry.payload, entry, entry.headers)
                else:
                    self._finish(entry)
                    log.warning("no receipt for command %s after %d attempt(s)", entry.command_id, entry.sends)
                    entry.future.set_exception(ReceiptTimeout(str(entry.command_id), now - entry.started,
                                                              entry.sends, entry.last_error, self.topics.emissions))
