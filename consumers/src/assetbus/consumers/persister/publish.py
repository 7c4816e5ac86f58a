"""Publishing a batch's outcome: receipts, asset events, dead letters; acknowledged before offsets move.

Records go through the toolkit's `BatchSender` (one record batch per topic-partition, partitioned
like `send()`), on the toolkit's idempotent acks=all producer, renewed after a batch the broker refused (a
missing ACL breaks its sequence numbers). Here only the persister's own rule:
a dead letter too large for the broker is cut, with a header saying so.
"""

from __future__ import annotations

from collections.abc import Iterable

from assetbus.consumers.persister.batch import Outgoing
from assetbus.schemas.deadletters import TRUNCATED_FROM

__all__ = ["DLQ_VALUE_LIMIT", "PUBLISHING", "fitting"]

PUBLISHING = "publishing receipts and asset events"
"""The persister's work, by name, in its `refusals`."""

DLQ_VALUE_LIMIT = 512 * 1024
"""A dead letter larger than this keeps only its first bytes (a header says so): it must still fit
the broker's message size limit, or it would block the batch behind it."""


def fitting(records: Iterable[Outgoing]) -> Iterable[Outgoing]:
    """The records to send; one with headers (a dead letter has them) larger than `DLQ_VALUE_LIMIT` is cut."""
    for record in records:
        if not record.headers or record.value is None or len(record.value) <= DLQ_VALUE_LIMIT:
            yield record
        else:
            headers = (*record.headers, (TRUNCATED_FROM, str(len(record.value)).encode()))
            yield Outgoing(record.topic, record.key, record.value[:DLQ_VALUE_LIMIT], headers)
