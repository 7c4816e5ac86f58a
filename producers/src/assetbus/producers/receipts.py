"""The emitter's receipt listener: the toolkit's reply-topic reader, keyed by the emitter's producer id."""

from __future__ import annotations

from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.errors import TopicMissing
from assetbus.producers.kafka.replies import ReplyReader

__all__ = ["ReceiptListener"]


class ReceiptListener(ReplyReader):
    """One per emitter process: reads the reply-topic partition its producer id hashes to."""

    async def start(self) -> None:
        try:
            await super().start()
        except TopicMissing as error:
            raise EmitterError(str(error)) from error
