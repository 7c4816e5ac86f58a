"""The persister service: the toolkit's consume → handle → commit shell around the batch pipeline.

Per batch, in chunks of `chunk_size` that overlap like a pipeline (up to `transactions_in_flight` in their
transactions, each published once stored), then the batch's own offsets once the broker has acknowledged
every record. A database outage stalls the chunk with the retry policy's back-off; any other failure rewinds
the batch. The producer is the toolkit's idempotent one, renewed after a batch the broker refused (a missing
ACL breaks its sequence numbers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError

from assetbus.consumers.auth import TokenVerifier
from assetbus.consumers.auth.cache import CachedTokenVerifier
from assetbus.consumers.errors import NotStarted
from assetbus.consumers.faults import storage_unavailable
from assetbus.consumers.observe.service import Service
from assetbus.consumers.persister.batch import BatchProcessor, BatchResult, Outgoing, Prepared
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.persister.metrics import PersisterMetrics
from assetbus.consumers.storage import create_engine
from assetbus.producers.kafka.access import access_denied
from assetbus.producers.kafka.errors import KafkaToolkitError
from assetbus.producers.kafka.producer import create_producer
from assetbus.producers.kafka.renewal import RenewableProducer
from assetbus.producers.kafka.retry import retry_until
from assetbus.producers.kafka.sender import BatchSender, Delivery, wait_all
from assetbus.producers.kafka.shell import ServiceShell
from assetbus.producers.kafka.topics import core_specs
from assetbus.producers.kafka.types import KeyedRecord
from assetbus.schemas.deadletters import TRUNCATED_FROM

log = logging.getLogger("assetbus.persister")

PUBLISHING = "publishing receipts and asset events"
"""The persister's work, by name, in its `refusals`."""

DLQ_VALUE_LIMIT = 512 * 1024
"""A dead letter larger than this keeps only its first bytes (a header says so): it must still fit
the broker's message size limit, or it would block the batch behind it."""


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
    """Remembers reply topics seen to exist; asks the broker (all-topics metadata) about other names.

    Producing to a missing topic does not fail fast (the producer waits for its metadata), so one command
    naming one would stall and redeliver its whole batch forever: such commands are dead-lettered. Not seeing
    the deployment's own receipts topic is an outage (the topic deleted, or the Write ACL removed, which hides
    it from the metadata), never a fault of the command: the batch fails with `ReceiptsTopicUnavailable`. A
    name found missing is asked about again only after `RECHECK_S` (one metadata request per `RECHECK_S`).
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


def fitting(records: Iterable[Outgoing]) -> Iterable[Outgoing]:
    """The records to send; one with headers (a dead letter has them) larger than `DLQ_VALUE_LIMIT` is cut."""
    for record in records:
        if not record.headers or record.value is None or len(record.value) <= DLQ_VALUE_LIMIT:
            yield record
        else:
            headers = (*record.headers, (TRUNCATED_FROM, str(len(record.value)).encode()))
            yield Outgoing(record.topic, record.key, record.value[:DLQ_VALUE_LIMIT], headers)


def _settle(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def _publish(sender: BatchSender, result: BatchResult, total: BatchResult) -> list[Delivery]:
    total.merge(result)
    return await sender.send(fitting(result.outgoing()))


class Persister(Service):
    def __init__(self, config: PersisterConfig) -> None:
        self.config: PersisterConfig = config
        self.log = log
        self.metrics: PersisterMetrics = PersisterMetrics()
        self.engine = create_engine(config.database_url, pre_ping=False)  # a dead connection: chunk retried
        self.tokens = CachedTokenVerifier(TokenVerifier.configured(jwks=config.token_jwks, secret=config.token_secret))
        self.publisher: BatchSender | None = None
        self.replies: ReplyTopics | None = None
        self.processor = BatchProcessor(self.engine, self.tokens, config.topics, self._missing_topics)
        self.retry = config.retry_policy()
        self.shell: ServiceShell[Sequence[KeyedRecord]] = ServiceShell(
            config.kafka, config.consumer_settings(config.topics.emissions),
            self._on_batch, retry=self.retry, metrics=self.metrics, log=log, on_failure=self._failed,
            after_commit=self._committed, name="assetbus-persister", refusals=self.refusals)
        self.offsets = self.shell.offsets

    async def _on_batch(self, records: Sequence[KeyedRecord]) -> None:
        started = time.perf_counter()
        result = await self.handle(records)
        self.metrics.observe(result, len(records), time.perf_counter() - started)

    def _committed(self) -> None:
        self.offsets.update_lag()
        self.refusals.cleared(PUBLISHING)

    def _failed(self, error: BaseException) -> None:
        """The shell rewound the batch and waits before fetching again; a reply topic may have gone. A refusal
        by the ACLs is held in `refusals` (`/readyz` names it) until a batch commits again."""
        self.metrics.batch_failures.inc()
        if isinstance(error, ReceiptsTopicUnavailable):
            error = TopicAuthorizationFailedError(error.topic)  # named as the ACL it most likely is
        if (denied := access_denied(error, self.config.kafka, operation="Write")) is not None:
            self.refusals.refused(PUBLISHING, denied)
        if self.replies is not None:
            self.replies.forget()

    async def handle(self, records: Sequence[KeyedRecord]) -> BatchResult:
        """Store and publish one batch (module docstring); returns once everything is durable on both sides."""
        if (publisher := self.publisher) is None:
            raise NotStarted("the persister")
        size = self.config.chunk_size
        depth = self.config.transactions_in_flight
        total = BatchResult()
        published: set[int] = set()
        scopes: set[tuple[str, str, str]] = set()
        pending: list[Delivery] = []
        storing: deque[asyncio.Task[BatchResult]] = deque()
        try:
            for start in range(0, len(records), size):
                prepared = await self.processor.prepare(records[start:start + size])
                chunk_scopes = prepared.scopes()
                earlier = list(storing) if chunk_scopes & scopes else []
                scopes |= chunk_scopes
                storing.append(asyncio.create_task(self._store(earlier, prepared, published)))
                await asyncio.sleep(0)  # let it start its transaction before more CPU work
                while len(storing) >= depth or (storing and storing[0].done()):
                    pending += await _publish(publisher, await storing.popleft(), total)
            while storing:
                pending += await _publish(publisher, await storing.popleft(), total)
            await wait_all(pending)
        finally:
            for delivery in pending:
                delivery.future.add_done_callback(_settle)
            for task in storing:
                task.cancel()
            for task in storing:
                with contextlib.suppress(BaseException):
                    await task
        return total

    async def _store(self, earlier: list[asyncio.Task[BatchResult]], prepared: Prepared,
                     published: set[int]) -> BatchResult:
        """Store a chunk once the `earlier` chunks (which share a dedupe scope with it) are stored, retrying while
        the database is unavailable."""
        if earlier:
            await asyncio.wait(earlier)

        def retrying(error: BaseException, delay: float) -> None:
            self.metrics.db_retries.inc()
            log.warning("database unavailable; retrying the chunk", extra={"retry_in_s": round(delay, 3),
                                                                           "error": str(error)[:300]})

        result = await retry_until(lambda: self.processor.store(prepared, published), self.retry,
                                   what="the database", retriable=storage_unavailable, on_retry=retrying)
        if result.db_seconds:
            self.metrics.db_commit_seconds.observe(result.db_seconds)
        return result

    async def _missing_topics(self, names: set[str]) -> set[str]:
        """Reply topics that do not exist (their commands are dead-lettered); raises `ReceiptsTopicUnavailable`
        when the deployment's own receipts topic is among them (the batch fails and waits for it)."""
        missing = await self.replies.missing(names) if self.replies is not None else set()
        if self.config.topics.receipts in missing:
            raise ReceiptsTopicUnavailable(self.config.topics.receipts)
        return missing

    async def dependencies(self, stack: AsyncExitStack) -> None:
        await self.wait_for(stack, self.config, engine=self.engine, required=core_specs(self.config.topics))

    async def started(self, stack: AsyncExitStack) -> None:
        config = self.config
        log.info("persister running", extra={"topic": config.topics.emissions, "group": config.group_id,
                                             "kafka": config.kafka.describe()})

    async def open(self, stack: AsyncExitStack) -> None:
        renewable = RenewableProducer(
            lambda: create_producer(self.config.kafka, linger_ms=self.config.producer_linger_ms),
            on_renewed=self._renewed)
        await renewable.start()
        stack.push_async_callback(renewable.stop)
        self.publisher = BatchSender(renewable)
        self._renewed(renewable.producer)

    def _renewed(self, producer: AIOKafkaProducer) -> None:
        """The producer now in use (a new one after a batch the broker refused): reply topics are asked through it."""
        self.replies = ReplyTopics(producer)
