"""The async emitter: build a command, send it, wait for its receipt; retries resend the same command."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import UTC, datetime
from typing import Any

import jwt
from aiokafka import AIOKafkaProducer

from producers.errors import EmissionRejected, ReceiptTimeout
from producers.receipts import ReceiptListener
from producers.validation import check_dedupe_key, check_extra, check_partition
from schemas import AssetRef, EmissionCommand, Provenance, Receipt, Topics


def source_of(token: str) -> Provenance:
    """The provenance a token names (read without verifying: the persister verifies)."""
    claims = jwt.decode(token, options={"verify_signature": False, "verify_aud": False, "verify_exp": False})
    return Provenance.model_validate({k: claims.get(k) for k in Provenance.model_fields})


class AsyncEmitter:
    """One per process and token. `async with AsyncEmitter(...) as emitter: await emitter.emit(...)`."""

    def __init__(
        self,
        bootstrap_servers: str,
        token: str,
        *,
        topics: Topics | None = None,
        producer_id: str | None = None,
        receipt_timeout_s: float = 10.0,
        attempts: int = 3,
        max_in_flight: int = 10_000,
    ) -> None:
        self.topics = topics or Topics()
        self.token = token
        self.source = source_of(token)
        self.producer_id = producer_id or f"emitter-{uuid.uuid4().hex}"
        self.receipt_timeout_s = receipt_timeout_s
        self.attempts = attempts
        self._bootstrap = bootstrap_servers
        self._producer: AIOKafkaProducer | None = None
        self.receipts = ReceiptListener(bootstrap_servers, self.topics.receipts, self.producer_id)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[Receipt]] = set()

    async def start(self) -> None:
        await self.receipts.start()
        self._producer = AIOKafkaProducer(bootstrap_servers=self._bootstrap, enable_idempotence=True, acks="all",
                                          linger_ms=5, max_batch_size=512 * 1024)
        try:
            await self._producer.start()
        except BaseException:
            await self.receipts.stop()
            raise

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        try:
            if self._producer is not None:
                await self._producer.stop()
        finally:
            await self.receipts.stop()

    async def __aenter__(self) -> AsyncEmitter:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def command(
        self,
        asset: AssetRef,
        *,
        extra: dict[str, Any] | None = None,
        partition_key: str | None = None,
        partition_date: datetime | None = None,
        dedupe_key: str | None = None,
    ) -> EmissionCommand:
        """A validated command, ready to send (raises InvalidEmission)."""
        checked_extra = check_extra(extra)
        check_partition(partition_key, partition_date)
        check_dedupe_key(dedupe_key)
        return EmissionCommand(
            command_id=uuid.uuid4(), producer_id=self.producer_id, reply_to=self.topics.receipts, asset=asset,
            source=self.source, token=self.token, extra=checked_extra, partition_key=partition_key,
            partition_date=partition_date, dedupe_key=dedupe_key, emitted_at=datetime.now(UTC))

    async def emit(self, asset: AssetRef, *, raise_on_reject: bool = True, **fields: Any) -> Receipt:
        """Send one emission and wait for its receipt. Raises EmissionRejected unless asked not to."""
        receipt = await self.send(self.command(asset, **fields))
        if receipt.rejected and raise_on_reject:
            raise EmissionRejected(receipt)
        return receipt

    async def submit(self, command: EmissionCommand) -> asyncio.Future[Receipt]:
        """Fire and forget: returns once the command is handed over; the future resolves with its receipt.

        Waits (backpressure) while `max_in_flight` commands have no receipt yet.
        """
        await self._slots.acquire()
        task = asyncio.create_task(self._send_with_slot(command))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _send_with_slot(self, command: EmissionCommand) -> Receipt:
        try:
            return await self.send(command)
        finally:
            self._slots.release()

    async def send(self, command: EmissionCommand) -> Receipt:
        """Send `command` and wait for its receipt, resending the *same* command on timeout."""
        assert self._producer is not None, "call start() first"
        payload = command.model_dump_json().encode()
        key = command.asset.name.encode()
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiter = self.receipts.expect(command.command_id)
        try:
            for _ in range(self.attempts):
                await self._producer.send(self.topics.emissions, payload, key=key)
                try:
                    return await asyncio.wait_for(asyncio.shield(waiter), self.receipt_timeout_s)
                except TimeoutError:
                    continue
            raise ReceiptTimeout(str(command.command_id), loop.time() - started, self.attempts)
        finally:
            self.receipts.forget(command.command_id)
