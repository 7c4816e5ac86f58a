"""Publishing a batch's outcome: receipts, asset events, dead letters; acknowledged before offsets move.

Records go through the toolkit's `BatchSender` (one record batch per topic-partition, partitioned
like `send()`), on the toolkit's idempotent acks=all producer, renewed after a batch the broker refused (a
missing ACL breaks its sequence numbers). Here only the persister's own rule:
a dead letter too large for the broker is cut, with a header saying so.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka import AIOKafkaProducer

from assetbus.consumers.persister.batch import Outgoing
from assetbus.producers.kafka.renewal import RenewableProducer
from assetbus.producers.kafka.sender import BatchSender, Delivery
from assetbus.schemas.deadletters import TRUNCATED_FROM

__all__ = ["DLQ_VALUE_LIMIT", "PUBLISHING", "Publisher"]

PUBLISHING = "publishing receipts and asset events"
"""The persister's work, by name, in its `refusals`."""

DLQ_VALUE_LIMIT = 512 * 1024
"""A dead letter larger than this keeps only its first bytes (a header says so): it must still fit
the broker's message size limit, or it would block the batch behind it."""


def _fitting(record: Outgoing) -> Outgoing:
    if record.value is None or len(record.value) <= DLQ_VALUE_LIMIT:
        return record
    headers = (*record.headers, (TRUNCATED_FROM, str(len(record.value)).encode()))
    return Outgoing(record.topic, record.key, record.value[:DLQ_VALUE_LIMIT], headers)


def _cut(records: Iterable[Outgoing]) -> Iterable[Outgoing]:
    for record in records:
        yield _fitting(record) if record.headers else record


class Publisher:
    """Sends records in per-partition batches."""

    def __init__(self, producer: AIOKafkaProducer | RenewableProducer) -> None:
        self._sender = BatchSender(producer)

    async def send(self, records: Iterable[Outgoing]) -> list[Delivery]:
        """Hand the records to the producer; each delivery resolves when the broker has its batch (or fails)."""
        return await self._sender.send(_cut(records))
