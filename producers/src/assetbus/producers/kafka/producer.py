"""The one producer factory: every assetbus producer is idempotent with acks=all.

An acknowledged record is on the log once per send, whichever client sent it (emitter SDK,
persister, scheduler, HTTP gateway). Only the batching knobs differ per client.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeVar

from aiokafka import AIOKafkaProducer

from assetbus.producers.kafka.connection import KafkaConnection

__all__ = ["DEFAULT_MAX_BATCH_BYTES", "create_producer", "started"]

DEFAULT_MAX_BATCH_BYTES = 512 * 1024
"""Largest record batch per partition: big batches are what makes the persister and emitter fast."""


def create_producer(connection: KafkaConnection, *, linger_ms: int = 5, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
                    compression: str | None = None, request_timeout_ms: int = 40_000) -> AIOKafkaProducer:
    """An idempotent, acks=all producer for `connection` (not started: `await producer.start()`).

    The connection's pass-through properties (`request.timeout.ms`, `compression.type`, ...) win over
    these defaults; an explicit `compression` wins over the property (`none`: no compression)."""
    kwargs: dict[str, Any] = {"linger_ms": linger_ms, "max_batch_size": max_batch_bytes,
                              "request_timeout_ms": request_timeout_ms, **connection.client_kwargs("producer")}
    if compression is not None:
        kwargs["compression_type"] = None if compression == "none" else compression
    return AIOKafkaProducer(**kwargs, enable_idempotence=True, acks="all")


class _Client(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


C = TypeVar("C", bound=_Client)


@contextlib.asynccontextmanager
async def started(client: C) -> AsyncIterator[C]:
    """`client` (a producer or consumer) started, and stopped when the block exits. Also when its start fails:
    a failed start leaves the client's connections open, and an unclosed client's `__del__` runs at a random
    later point."""
    try:
        await client.start()
        yield client
    finally:
        await client.stop()
