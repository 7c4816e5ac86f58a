"""HTTP emissions: build the command from the body and the caller's token, send it through Kafka to the persister,
and wait for its receipt (the same pipeline as the SDK, the same guarantees). A refused batch leaves the idempotent
producer's sequence numbers out of order for good, so `RenewableProducer` starts a new one before the next command.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from pydantic import ValidationError

from assetbus.consumers.api.errors import ApiError, ApiErrorCode
from assetbus.consumers.api.models import EmitRequest
from assetbus.consumers.api.security import Caller
from assetbus.consumers.errors import ConsumerError
from assetbus.producers.kafka.access import AccessRefusals, access_denied, naming_refusals
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import TopicMissing
from assetbus.producers.kafka.producer import create_producer
from assetbus.producers.kafka.renewal import RenewableProducer
from assetbus.producers.kafka.replies import ReplyReader
from assetbus.schemas import EmissionCommand, ErrorCode, Receipt, Topics
from assetbus.schemas.codecs import encode_command

REJECTION_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_COMMAND: 422,
    ErrorCode.UNSUPPORTED_SCHEMA_VERSION: 422,
    ErrorCode.INVALID_PARTITION: 422,
    ErrorCode.EXTRA_TOO_LARGE: 413,
    ErrorCode.ASSET_NOT_FOUND: 404,
    ErrorCode.UNAUTHORIZED: 403,
    ErrorCode.ATTEMPT_ENDED: 403,  # as the token route answers it: the token's attempt is over
    ErrorCode.INSUFFICIENT_SCOPE: 403,
    ErrorCode.ASSET_NOT_DECLARED: 403,
    ErrorCode.INTERNAL: 503,
}
"""The HTTP status of a rejected receipt, by its error code."""


EMITTING = "HTTP emit"
"""The API's work, by name, in its `refusals`."""


class EmissionGateway:
    """One per API process: the toolkit's idempotent producer and reply-topic reader (receipts keyed by this API)."""

    def __init__(self, connection: KafkaConnection, topics: Topics, *, receipt_timeout_s: float = 10.0,
                 instance_id: str | None = None, refusals: AccessRefusals | None = None) -> None:
        self.topics = topics
        self.refusals = refusals or AccessRefusals()
        self.receipt_timeout_s = receipt_timeout_s
        self.producer_id = instance_id or f"api-{uuid.uuid4().hex}"
        self.connection = connection
        self._producer = RenewableProducer(lambda: create_producer(connection, linger_ms=2),
                                           start=self._start_producer)
        self.replies = ReplyReader(connection, topics.receipts, self.producer_id)

    async def start(self) -> None:
        await self._producer.start()
        try:
            try:
                await self.replies.start()
            except TopicMissing as error:
                raise ConsumerError(str(error)) from error
        except BaseException:
            await self._producer.stop()
            raise

    async def _start_producer(self, producer: AIOKafkaProducer) -> None:
        with naming_refusals(self.connection, "Write", topics=(self.topics.emissions,)):
            await producer.start()

    async def stop(self) -> None:
        try:
            await self.replies.stop()
        finally:
            await self._producer.stop()

    def command(self, body: EmitRequest, caller: Caller) -> EmissionCommand:
        """The command this request stands for; provenance and token are the caller's own."""
        try:
            return EmissionCommand(
                command_id=body.command_id or uuid.uuid4(), producer_id=self.producer_id,
                reply_to=self.topics.receipts, asset=body.asset, source=caller.claims.provenance(),
                token=caller.token, extra=body.extra, partition_key=body.partition_key,
                partition_date=body.partition_date, dedupe_key=body.dedupe_key, emitted_at=datetime.now(UTC))
        except ValidationError as error:
            raise ApiError(422, ApiErrorCode.INVALID_REQUEST, f"not a valid emission: {error.errors()[0]['msg']}",
                           command_id=body.command_id) from error

    async def emit(self, body: EmitRequest, caller: Caller) -> Receipt:
        """Send and wait for the receipt. Raises ApiError 503 if the broker refuses the command, 504 if no
        receipt comes in time (resending is safe either way)."""
        command = self.command(body, caller)
        try:
            payload = encode_command(command)
        except ValueError as error:  # e.g. a lone surrogate in `extra`
            raise ApiError(422, ApiErrorCode.INVALID_REQUEST, f"the emission cannot be encoded: {error}"[:300],
                           command_id=command.command_id) from error
        try:  # a new producer in place of one a refused batch broke (503 naming the refusal if it is refused too)
            producer = await self._producer.renewed()
        except KafkaError as error:
            raise self._unavailable(command.command_id, error) from error
        with self.replies.awaiting(command.command_id) as receipt:
            try:  # appended to the producer's open batch: the request does not wait for the broker's ack
                delivery = await asyncio.wait_for(producer.send(
                    self.topics.emissions, payload, key=command.asset.name.encode()), self.receipt_timeout_s)
            except (KafkaError, TimeoutError) as error:
                raise self._unavailable(command.command_id, error) from error
            delivery.add_done_callback(_retrieve)
            answer = await self._receipt(command.command_id, receipt, delivery)
        self.refusals.cleared(EMITTING)
        return answer

    async def _receipt(self, command_id: uuid.UUID, receipt: asyncio.Future[Receipt],
                       delivery: asyncio.Future[object]) -> Receipt:
        """The receipt; 503 as soon as the broker refuses the command, 504 at the timeout."""
        deadline = asyncio.get_running_loop().time() + self.receipt_timeout_s
        waiting: set[asyncio.Future[Any]] = {receipt, delivery}
        while not receipt.done():
            left = deadline - asyncio.get_running_loop().time()
            done, _ = await asyncio.wait(waiting, timeout=max(left, 0), return_when=asyncio.FIRST_COMPLETED)
            if not done:
                raise ApiError(504, ApiErrorCode.RECEIPT_TIMEOUT,
                               f"no receipt within {self.receipt_timeout_s:g}s; the command may still be stored: "
                               "resend it with the same command_id", command_id=command_id)
            if delivery in done and not receipt.done():
                error = delivery.exception()
                if error is not None:
                    raise self._unavailable(command_id, error) from error
                waiting = {receipt}
        return receipt.result()

    def _unavailable(self, command_id: uuid.UUID, error: BaseException) -> ApiError:
        """503: the broker did not take the command; a refusal by its ACLs is named (and held in `refusals`)."""
        denied = access_denied(error, self.connection, operation="Write", topics=(self.topics.emissions,))
        if denied is not None:
            self.refusals.refused(EMITTING, denied)
        self._producer.note(error)
        why = str(denied) if denied is not None else type(error).__name__
        return ApiError(503, ApiErrorCode.BROKER_UNAVAILABLE,
                        f"the broker did not take the command ({why}); resend it with the same command_id",
                        command_id=command_id, headers={"Retry-After": "1"})


def _retrieve(delivery: asyncio.Future[object]) -> None:
    """Marks a delivery's exception as seen (a receipt may have answered the request first)."""
    if not delivery.cancelled():
        delivery.exception()
