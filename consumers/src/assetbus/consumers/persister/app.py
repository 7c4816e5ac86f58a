"""The persister service: a FastStream batch subscriber whose offsets follow the database commit.

Per batch (up to `max_records`), in chunks of `chunk_size` that overlap like a pipeline: check the
next chunk while up to `transactions_in_flight` are in their transactions, publish each as soon as
it is stored; once every receipt, asset event and dead letter of the batch is acknowledged by the
broker, commit the batch's own offsets (`Offsets`; AckPolicy.MANUAL, never the ACK_FIRST default).
A database outage stalls the chunk with a bounded back-off; any other failure rewinds the batch for
redelivery after a pause.

FastStream runs the consume loop, the signals and the graceful shutdown; the handler never lets an
exception reach it (FastStream would log it and move on past the batch) and does its own commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker, KafkaMessage
from faststream.kafka.message import FAKE_CONSUMER, KafkaAckableMessage

from assetbus.consumers.auth import TokenVerifier
from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.logfilters import quiet_consumer_only_notice
from assetbus.consumers.persister.batch import BatchProcessor, BatchResult, Prepared, RawRecord
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.persister.metrics import MetricsServer, PersisterMetrics
from assetbus.consumers.persister.offsets import Offsets
from assetbus.consumers.persister.publish import Publisher, create_producer, wait_all
from assetbus.consumers.persister.replies import ReplyTopics
from assetbus.consumers.persister.tokens import CachedTokenVerifier
from assetbus.consumers.storage import create_engine

log = quiet_consumer_only_notice(logging.getLogger("assetbus.persister"))


async def _keep_raw(msg: Any) -> Any:
    """Decoder that leaves the bytes alone: the persister parses (and dead-letters) them itself."""
    return ()


async def _raw_parser(records: tuple[Any, ...], original: Any) -> KafkaMessage:
    """A parser that cannot fail: FastStream's decodes every header as UTF-8, and a parser error
    makes FastStream skip the batch without telling the handler. The persister needs only the records."""
    del original
    first, last = records[0], records[-1]
    return KafkaAckableMessage(raw_message=records, body=(), consumer=FAKE_CONSUMER,
                               message_id=f"{first.partition}-{first.offset}-{last.offset}")


def _settle(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class Persister:
    """The service with an explicit lifecycle: `await start()`, `await stop()`, or `async with`."""

    def __init__(self, config: PersisterConfig) -> None:
        self.config = config
        self.metrics = PersisterMetrics()
        self.engine = create_engine(config.database_url)
        self.tokens = CachedTokenVerifier(TokenVerifier(config.token_secret))
        self.producer: AIOKafkaProducer | None = None
        self.publisher: Publisher | None = None
        self.replies: ReplyTopics | None = None
        self.processor = BatchProcessor(self.engine, self.tokens, config.topics, self._missing_topics)
        self.offsets = Offsets(self.metrics, config.revoke_wait_s)
        self._metrics_server: MetricsServer | None = None
        self._failures = 0
        self.broker = KafkaBroker(config.bootstrap_servers, consumer_only=True, logger=log, graceful_timeout=10.0,
                                  log_level=logging.DEBUG)  # "Received"/"Processed" per batch: debug only
        self.subscriber = self.broker.subscriber(
            config.topics.emissions,
            group_id=config.group_id,
            batch=True,
            max_records=config.max_records,
            batch_timeout_ms=config.batch_timeout_ms,
            auto_offset_reset="earliest",
            ack_policy=AckPolicy.MANUAL,
            listener=self.offsets,
            decoder=_keep_raw,
            parser=_raw_parser,
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            max_partition_fetch_bytes=config.max_partition_fetch_bytes,
            fetch_max_wait_ms=config.fetch_max_wait_ms,
        )
        self.subscriber(self._on_batch)

    async def _on_batch(self, body: Any, message: KafkaMessage) -> None:
        del body
        records: tuple[RawRecord, ...] = message.raw_message
        self.offsets.consumer = self.subscriber.consumer
        started = time.perf_counter()
        result: BatchResult | None = None
        with self.offsets.in_flight() as generation:
            try:
                result = await self.handle(records)
            except Exception:
                self.offsets.rewind(records, generation)
                log.exception("batch failed; rewound for redelivery", extra={"records": len(records)})
            else:
                await self.offsets.commit(records, generation)
        if result is None:
            await self._pause_after_failure()
            return
        self._failures = 0
        self.metrics.observe(result, len(records), time.perf_counter() - started)
        self.offsets.update_lag()

    async def _pause_after_failure(self) -> None:
        """No busy loop: wait longer after each consecutive failure, up to `backoff_max_s`."""
        self.metrics.batch_failures.inc()
        if self.replies is not None:
            self.replies.forget()
        delay = min(self.config.backoff_initial_s * 2 ** self._failures, self.config.backoff_max_s)
        self._failures += 1
        await asyncio.sleep(delay)

    async def handle(self, records: Sequence[RawRecord]) -> BatchResult:
        """Store and publish one batch; returns once everything is durable on both sides.

        Chunk i+1 is checked while chunk i is in its transaction; up to `transactions_in_flight`
        transactions run at once; each chunk is published as soon as it is stored, in order.
        """
        assert self.publisher is not None, "call start() first"
        size = self.config.chunk_size
        depth = self.config.transactions_in_flight
        total = BatchResult()
        published: set[int] = set()
        scopes: set[tuple[str, str, str]] = set()
        pending: list[asyncio.Future[Any]] = []
        storing: deque[asyncio.Task[BatchResult]] = deque()
        try:
            for start in range(0, len(records), size):
                prepared = await self.processor.prepare(records[start:start + size])
                chunk_scopes = prepared.scopes()
                earlier = list(storing) if chunk_scopes & scopes else []
                scopes |= chunk_scopes
                storing.append(asyncio.create_task(self._store_after(earlier, prepared, published)))
                await asyncio.sleep(0)  # let it start its transaction before more CPU work
                while len(storing) >= depth or (storing and storing[0].done()):
                    pending += await self._publish(await storing.popleft(), total)
            while storing:
                pending += await self._publish(await storing.popleft(), total)
            await wait_all(pending)
        finally:
            for future in pending:
                future.add_done_callback(_settle)
            for task in storing:
                task.cancel()
            for task in storing:
                with contextlib.suppress(BaseException):
                    await task
        return total

    async def _publish(self, result: BatchResult, total: BatchResult) -> list[asyncio.Future[Any]]:
        assert self.publisher is not None
        total.merge(result)
        return await self.publisher.send(result.outgoing())

    async def _store_after(self, earlier: list[asyncio.Task[BatchResult]], prepared: Prepared,
                           published: set[int]) -> BatchResult:
        if earlier:  # it repeats a dedupe scope of a chunk in flight: store after it
            await asyncio.wait(earlier)
        return await self._store_until_done(prepared, published)

    async def _process_until_stored(self, records: Sequence[RawRecord]) -> BatchResult:
        """The database step of a batch, without publishing (retried while the database is away)."""
        return await self._store_until_done(await self.processor.prepare(records), set())

    async def _store_until_done(self, prepared: Prepared, published: set[int]) -> BatchResult:
        delay = self.config.backoff_initial_s
        while True:
            try:
                result = await self.processor.store(prepared, published)
            except StorageUnavailable as error:
                self.metrics.db_retries.inc()
                log.warning("database unavailable; retrying the chunk", extra={"retry_in_s": delay,
                                                                               "error": str(error)[:300]})
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.config.backoff_max_s)
                continue
            if result.db_seconds:
                self.metrics.db_commit_seconds.observe(result.db_seconds)
            return result

    async def _missing_topics(self, names: set[str]) -> set[str]:
        return await self.replies.missing(names) if self.replies is not None else set()

    async def open(self) -> None:
        """Everything but the consumer: the producer and the metrics endpoint."""
        self.producer = create_producer(self.config.bootstrap_servers, linger_ms=self.config.producer_linger_ms)
        await self.producer.start()
        self.publisher = Publisher(self.producer)
        self.replies = ReplyTopics(self.producer)
        if self.config.metrics_port is not None:
            self._metrics_server = MetricsServer(self.metrics.registry, self.config.metrics_port,
                                                 self.config.metrics_host)
            self._metrics_server.start()

    async def close(self) -> None:
        try:
            if self.producer is not None:
                await self.producer.stop()
                self.producer = None
        finally:
            if self._metrics_server is not None:
                self._metrics_server.stop()
                self._metrics_server = None
            await self.engine.dispose()

    @property
    def metrics_port(self) -> int | None:
        return self._metrics_server.port if self._metrics_server is not None else None

    async def start(self) -> None:
        await self.open()
        try:
            await self.broker.start()
        except BaseException:
            await self.close()
            raise

    async def stop(self) -> None:
        try:
            await self.broker.stop()
        finally:
            await self.close()

    async def __aenter__(self) -> Persister:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def create_app(config: PersisterConfig) -> FastStream:
    """A FastStream application (signals, graceful shutdown) around one Persister."""
    persister = Persister(config)
    app = FastStream(persister.broker, logger=log)
    app.on_startup(persister.open)
    app.after_shutdown(persister.close)
    return app
