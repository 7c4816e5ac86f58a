"""The async emitter: one token's face on a dispatcher. Build a command, send it, get its receipt."""

from __future__ import annotations

import asyncio

from typing_extensions import Unpack

from assetbus.producers.dispatch import DispatchConfig, Dispatcher, DispatchStats
from assetbus.producers.errors import raise_for_rejection
from assetbus.producers.kafka.connection import KafkaConnection, as_connection
from assetbus.producers.kafka.types import Lifecycle
from assetbus.producers.options import EmitOptions, SendOptions
from assetbus.producers.tokens import source_of
from assetbus.producers.wire import prepare
from assetbus.schemas import AssetRef, EmissionCommand, Provenance, Receipt, Topics

__all__ = ["AsyncEmitter"]


class AsyncEmitter(Lifecycle):
    """`async with AsyncEmitter(connection, token) as emitter: await emitter.emit(asset, ...)`.

    `connection` is a `KafkaConnection` (`KafkaConnection.from_environ()` reads the task runner's
    `KAFKA_*` variables) or a bootstrap list such as `"broker-1:9092,broker-2:9092"`.

    It owns a Dispatcher (producer, receipt listener, resends), or shares one passed as `dispatcher`
    (then starting and stopping the dispatcher is its owner's job).
    """

    def __init__(
        self,
        connection: KafkaConnection | str,
        token: str,
        *,
        topics: Topics | None = None,
        producer_id: str | None = None,
        receipt_timeout_s: float = 10.0,
        attempts: int = 3,
        max_in_flight: int = 10_000,
        linger_ms: int = 5,
        compression: str | None = None,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.token = token
        self.source: Provenance = source_of(token)
        self._owns = dispatcher is None
        self.dispatcher = dispatcher or Dispatcher(
            as_connection(connection), topics, producer_id=producer_id,
            config=DispatchConfig(receipt_timeout_s=receipt_timeout_s, attempts=attempts,
                                  max_in_flight=max_in_flight, linger_ms=linger_ms, compression=compression))
        self._encoder = self.dispatcher.encoder(token)

    @property
    def stats(self) -> DispatchStats:
        return self.dispatcher.stats

    async def start(self) -> None:
        if self._owns:
            await self.dispatcher.start()

    async def stop(self) -> None:
        if self._owns:
            await self.dispatcher.stop()

    def command(self, asset: AssetRef, **options: Unpack[EmitOptions]) -> EmissionCommand:
        """A validated command, ready to `submit` or `send` (raises InvalidEmission)."""
        return self._encoder.command(prepare(asset, **options))

    async def emit(self, asset: AssetRef, *, raise_on_reject: bool = True,
                   **options: Unpack[SendOptions]) -> Receipt:
        """Send one emission and wait for its receipt. A rejection raises its typed EmissionRejected
        (AssetNotFound, Unauthorized, ...) unless `raise_on_reject=False`; no receipt after every
        attempt raises ReceiptTimeout."""
        future = await self.emit_nowait(asset, **options)
        receipt = await future
        return raise_for_rejection(receipt) if raise_on_reject else receipt

    async def emit_nowait(self, asset: AssetRef, **options: Unpack[SendOptions]) -> asyncio.Future[Receipt]:
        """Fire and forget: returns once the emission is handed over (waiting only while
        `max_in_flight` commands have no receipt); the future resolves with the receipt (rejected
        ones included) or fails with ReceiptTimeout."""
        return await self.dispatcher.submit_request(self.token, prepare(asset, **options))

    async def submit(self, command: EmissionCommand) -> asyncio.Future[Receipt]:
        """Fire and forget a command built by `command()` (or by hand); the future resolves with its receipt."""
        return await self.dispatcher.submit(command)

    async def send(self, command: EmissionCommand) -> Receipt:
        """Send `command` and wait for its receipt, resending the *same* command on timeout."""
        return await self.dispatcher.send(command)

    async def flush(self) -> None:
        """Wait until everything handed over is on the broker."""
        await self.dispatcher.flush()

    async def drain(self, timeout_s: float | None = None) -> None:
        """Wait until everything handed over has its receipt."""
        await self.dispatcher.drain(timeout_s)
