"""The emitter's receipt listener: the toolkit's reply-topic reader, keyed by the emitter's producer id."""

from __future__ import annotations

from collections.abc import Callable

from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import TopicMissing
from assetbus.producers.kafka.replies import ReplyReader
from assetbus.producers.kafka.sender import partition_for
from assetbus.schemas import Receipt

__all__ = ["ReceiptListener", "partition_for"]


class ReceiptListener(ReplyReader):
    """One per emitter process: reads the reply-topic partition its producer id hashes to."""

    def __init__(self, connection: KafkaConnection, topic: str, producer_id: str, *,
                 on_receipt: Callable[[Receipt], None] | None = None) -> None:
        super().__init__(connection, topic, producer_id, on_receipt=on_receipt)

    async def start(self) -> None:
        try:
            await super().start()
        except TopicMissing as error:
            raise EmitterError(str(error)) from error
