"""What the services need of a consumed Kafka record (aiokafka's ConsumerRecord has it)."""

from __future__ import annotations

from typing import Protocol


class ConsumedRecord(Protocol):
    """Where a record was read from, and its bytes."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def value(self) -> bytes | None: ...


class KeyedRecord(ConsumedRecord, Protocol):
    """A consumed record with its key."""

    @property
    def key(self) -> bytes | None: ...
