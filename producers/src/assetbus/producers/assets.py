"""The task-facing handle: `orders = Asset("orders", uri=...)`, then `orders.emit(...)` while a task runs
(docs/emitting.md, "Emit from a task"). Identity and destination come from the running task's context
(`producers.context`), never from the arguments.
"""

from __future__ import annotations

import asyncio
import concurrent.futures

from pydantic import ValidationError
from typing_extensions import Unpack

from assetbus.producers.context import EmissionContext, Transport, current_context
from assetbus.producers.errors import InvalidEmission, ReceiptTimeout, raise_for_rejection
from assetbus.producers.options import SendOptions
from assetbus.producers.runtime import KafkaTransport, get_runtime
from assetbus.producers.wire import EmissionRequest, prepare
from assetbus.schemas import AssetRef, Receipt

_WAIT_MARGIN_S = 30.0
"""How much longer than timeout x attempts a blocking emit() waits for the emitter thread."""


def _transport(context: EmissionContext) -> Transport:
    return context.transport or KafkaTransport(get_runtime(), context.kafka, context.topics)


class Asset:
    """A registered asset, named by name *and* URI (both must match the registry)."""

    __slots__ = ("ref",)

    def __init__(self, name: str, uri: str) -> None:
        try:
            self.ref = AssetRef(name=name, uri=uri)
        except ValidationError as error:
            first = error.errors()[0]
            raise InvalidEmission(f"asset.{first['loc'][0]}", first["msg"]) from error

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def uri(self) -> str:
        return self.ref.uri

    def __repr__(self) -> str:
        return f"Asset({self.ref.name!r}, uri={self.ref.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Asset) and other.ref == self.ref

    def __hash__(self) -> int:
        return hash(self.ref)

    def _request(self, options: SendOptions) -> tuple[EmissionContext, EmissionRequest]:
        context = current_context()
        context.check_outlet(self.ref)
        options["timeout_s"] = options.get("timeout_s") or context.receipt_timeout_s
        return context, prepare(self.ref, attempts=context.attempts, **options)

    def _submit(self, options: SendOptions) -> tuple[EmissionRequest, concurrent.futures.Future[Receipt]]:
        context, request = self._request(options)
        return request, _transport(context).submit(context.token, request)

    def emit(self, *, raise_on_reject: bool = True, **options: Unpack[SendOptions]) -> Receipt:
        """Emit "this asset (partition) is ready now" and wait for the receipt (blocking).

        The options (`extra`, `partition_key`, `partition_date`, `dedupe_key`, `timeout_s`) are
        `SendOptions`. Raises InvalidEmission / UnknownAsset / NoEmissionContext before sending,
        the typed EmissionRejected (AssetNotFound, Unauthorized, ...) for a rejection unless
        `raise_on_reject=False`, and ReceiptTimeout when no receipt came after every resend.
        """
        request, future = self._submit(options)
        config = get_runtime().config
        limit = (request.timeout_s or config.receipt_timeout_s) * (request.attempts or config.attempts) + _WAIT_MARGIN_S
        try:
            receipt = future.result(timeout=limit)
        except concurrent.futures.TimeoutError as error:
            raise ReceiptTimeout(str(request.command_id), limit, request.attempts or 1,
                                 "the emitter thread did not answer") from error
        return raise_for_rejection(receipt) if raise_on_reject else receipt

    def emit_nowait(self, **options: Unpack[SendOptions]) -> concurrent.futures.Future[Receipt]:
        """Fire and forget: returns once handed over (blocking only while the process's in-flight
        bound is reached); the future resolves with the receipt, rejected ones included."""
        return self._submit(options)[1]

    async def aemit(self, *, raise_on_reject: bool = True, **options: Unpack[SendOptions]) -> Receipt:
        """`emit()` for async task code: the same rules, without blocking the caller's event loop."""
        future = await self.aemit_nowait(**options)
        receipt = await future
        return raise_for_rejection(receipt) if raise_on_reject else receipt

    async def aemit_nowait(self, **options: Unpack[SendOptions]) -> asyncio.Future[Receipt]:
        """`emit_nowait()` for async task code; the future belongs to the caller's event loop."""
        context, request = self._request(options)
        return await _transport(context).asubmit(context.token, request)
