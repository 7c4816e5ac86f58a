"""The toolkit's aliases: what a consumed record offers, the shapes of the handlers the shell runs, and the
start/stop lifecycle that clients of the toolkit share.

aiokafka's `ConsumerRecord` satisfies both record protocols; tests and benchmarks pass plain objects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from typing_extensions import Self

__all__ = ["BatchHandler", "ConsumedRecord", "ConsumerSettings", "KeyedRecord", "Lifecycle"]


class ConsumedRecord(Protocol):
    """Where a record was read from, its bytes and its headers."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str, bytes]]: ...


class KeyedRecord(ConsumedRecord, Protocol):
    """A consumed record with its key."""

    @property
    def key(self) -> bytes | None: ...


class Lifecycle:
    """An explicit lifecycle, `await start()` and `await stop()` (here: nothing to do), that is also an async
    context manager: `async with` starts it and stops it."""

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


BatchHandler = Callable[[Sequence[Any]], Awaitable[None]]
"""Handles one batch of records (in offset order per partition); raise to have it rewound and redelivered."""


@dataclass(frozen=True)
class ConsumerSettings:
    """The consumer-group knobs of one shell (the services' configs fill them in)."""

    topics: tuple[str, ...]
    group_id: str
    group_instance_id: str | None = None
    """Static membership (KIP-345): a restart within the session timeout keeps this member's partitions
    and causes no rebalance. Unique per process (e.g. the pod name of a StatefulSet)."""
    max_records: int = 1000
    batch_timeout_ms: int = 50
    """How long one fetch waits to fill a batch."""
    fetch_max_wait_ms: int = 50
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 10 * 60 * 1000
    rebalance_timeout_ms: int | None = None
    max_partition_fetch_bytes: int = 1024 * 1024
    auto_offset_reset: str = "earliest"
    revoke_wait_s: float = 15.0
    drain_timeout_s: float = 10.0
    """On `stop()`, how long the batch in flight may take to finish and commit."""
    leave_timeout_s: float = 5.0
    """On `stop()`, how long closing the consumer (leaving the group) may take."""
    topics_wait_s: float = 10.0
    """On `start()`, how long the subscribed topics may stay missing from the broker's metadata before the
    start fails (they are created by `assetbus migrate`)."""
