"""The persister service: a FastStream batch subscriber whose offsets follow the database commit.

Per batch: decode and validate, one DB transaction (retried with a bounded back-off while the
database is away), publish receipts + asset events + dead letters and wait for the broker's
acks, and only then commit the offsets (AckPolicy.MANUAL, never the ACK_FIRST default).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from aiokafka import AIOKafkaProducer
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker, KafkaMessage
from faststream.message import StreamMessage

from consumers.auth import TokenVerifier
from consumers.errors import StorageUnavailable
from consumers.persister.batch import BatchProcessor, BatchResult, RawRecord
from consumers.persister.config import PersisterConfig
from consumers.persister.publish import create_producer, publish_result
from consumers.storage import create_engine

log = logging.getLogger("assetbus.persister")


async def _keep_raw(msg: StreamMessage[Any]) -> Any:
    """Decoder that leaves the bytes alone: the persister parses (and dead-letters) them itself."""
    return msg.body


async def _tolerant_parser(records: Any, original: Any) -> StreamMessage[Any]:
    """FastStream decodes headers as UTF-8; a record with binary headers must not poison a batch."""
    try:
        return await original(records)  # type: ignore[no-any-return]
    except UnicodeDecodeError:
        cleaned = tuple(dataclasses.replace(r, headers=[]) for r in records)
        return await original(cleaned)  # type: ignore[no-any-return]


class Persister:
    """The service with an explicit lifecycle: `await start()`, `await stop()`, or `async with`."""

    def __init__(self, config: PersisterConfig) -> None:
        self.config = config
        self.engine = create_engine(config.database_url)
        self.processor = BatchProcessor(self.engine, TokenVerifier(config.token_secret))
        self.producer: AIOKafkaProducer | None = None
        self.broker = KafkaBroker(config.bootstrap_servers, consumer_only=True, logger=log,
                                  graceful_timeout=10.0)
        self.broker.subscriber(
            config.topics.emissions,
            group_id=config.group_id,
            batch=True,
            max_records=config.max_records,
            batch_timeout_ms=config.batch_timeout_ms,
            auto_offset_reset="earliest",
            ack_policy=AckPolicy.MANUAL,
            decoder=_keep_raw,
            parser=_tolerant_parser,
            max_poll_interval_ms=10 * 60 * 1000,
        )(self._on_batch)

    async def _on_batch(self, body: list[bytes], message: KafkaMessage) -> None:
        records: tuple[RawRecord, ...] = message.raw_message
        del body
        try:
            await self.handle(records)
        except Exception:
            # Not acked: rewind to the batch's first offsets so it is delivered again (the dedupe
            # scope turns the repeat into duplicates), after a pause so a persistent fault is no busy loop.
            log.exception("batch of %d failed after the database step; it will be redelivered", len(records))
            await asyncio.sleep(self.config.backoff_initial_s)
            await message.nack()
            return
        await message.ack()

    async def handle(self, records: tuple[RawRecord, ...]) -> BatchResult:
        """Store and publish one batch; returns once everything is durable on both sides."""
        result = await self._process_until_stored(records)
        assert self.producer is not None
        await publish_result(self.producer, self.config.topics, result)
        return result

    async def _process_until_stored(self, records: tuple[RawRecord, ...]) -> BatchResult:
        delay = self.config.backoff_initial_s
        while True:
            try:
                return await self.processor.process(records)
            except StorageUnavailable as error:
                log.warning("database unavailable, retrying the batch in %.1fs: %s", delay, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.config.backoff_max_s)

    async def start(self) -> None:
        self.producer = create_producer(self.config.bootstrap_servers)
        await self.producer.start()
        try:
            await self.broker.start()
        except BaseException:
            await self.producer.stop()
            raise

    async def stop(self) -> None:
        try:
            await self.broker.stop()
        finally:
            if self.producer is not None:
                await self.producer.stop()
            await self.engine.dispose()

    async def __aenter__(self) -> Persister:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def create_app(config: PersisterConfig) -> FastStream:
    """A FastStream application (signals, graceful shutdown) around one Persister."""
    persister = Persister(config)
    app = FastStream(persister.broker, logger=log)

    @app.on_startup
    async def _open() -> None:
        persister.producer = create_producer(config.bootstrap_servers)
        await persister.producer.start()

    @app.after_shutdown
    async def _close() -> None:
        if persister.producer is not None:
            await persister.producer.stop()
        await persister.engine.dispose()

    return app
