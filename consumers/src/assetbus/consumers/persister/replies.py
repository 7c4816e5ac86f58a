"""Which reply topics exist: a command whose reply topic does not exist cannot be answered.

Producing to a missing topic does not fail fast (the producer waits for its metadata until
`request_timeout_ms`, then fails), so one such command would stall and redeliver its whole batch
forever. The persister asks first and dead-letters those commands instead.

Except for the deployment's own receipts topic: the persister started only once it was there, so not seeing
it now is an outage of the deployment (the topic deleted, or the persister's Write on it removed: a topic the
principal may not write to is left out of its metadata), never a fault of the command.
`ReceiptsTopicUnavailable` fails the batch instead: it is redelivered once the topic is back, and answered.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaProducer

from assetbus.producers.kafka.errors import KafkaToolkitError

log = logging.getLogger("assetbus.persister")

RECHECK_S = 1.0
GRACE_S = 0.3
"""How long a reply topic not yet in the metadata is given to appear before it is taken as missing."""


class ReceiptsTopicUnavailable(KafkaToolkitError):
    """The deployment's receipts topic is not in the persister's metadata: deleted, or its Write ACL removed."""

    retriable = True

    def __init__(self, topic: str) -> None:
        super().__init__(f"the receipts topic {topic!r} is not visible to this persister: it was deleted (`assetbus "
                         "migrate` creates it) or the persister's Write on it was removed; commands wait until it is "
                         "back")
        self.topic = topic


class ReplyTopics:
    """Remembers topics seen to exist; asks the broker (all-topics metadata) about other names.

    A name found missing is not asked about again for `RECHECK_S`, so a stream of commands naming
    the same missing topic costs one metadata request per `RECHECK_S`, not one per batch.
    """

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer
        self._existing: set[str] = set()
        self._missing: set[str] = set()
        self._checked_at = float("-inf")

    async def missing(self, names: set[str]) -> set[str]:
        unknown = names - self._existing
        if not unknown:
            return set()
        if unknown - self._missing or time.monotonic() - self._checked_at >= RECHECK_S:
            await self._ask(names)
            if unknown - self._existing - self._missing:
                # never seen missing before: maybe created a moment ago and not in the broker's
                # metadata yet; ask once more before giving up on it
                await asyncio.sleep(GRACE_S)
                await self._ask(names)
            self._missing = unknown - self._existing
            self._checked_at = time.monotonic()
            if self._missing:
                log.warning("reply topics do not exist", extra={"topics": sorted(self._missing)[:20]})
        return unknown - self._existing

    async def _ask(self, names: set[str]) -> None:
        metadata = await self._producer.client.fetch_all_metadata()
        self._existing |= set(metadata.topics()) & names

    def forget(self) -> None:
        """Ask again about every name (after a failed publish: a reply topic may have been deleted)."""
        self._existing.clear()
        self._missing.clear()
