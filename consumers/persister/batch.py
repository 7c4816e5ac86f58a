"""One batch of records in, receipts + asset events + dead letters out, with one DB transaction.

Nothing here talks to Kafka: the app publishes what `process` returns, then commits offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from consumers.auth import TokenVerifier
from consumers.persister.decode import DeadLetter, Rejection, decode
from consumers.persister.validate import validate
from consumers.storage import NewEvent, StoredEvent, assets_by_name, insert_events, is_transient, translated
from schemas import AssetEvent, AssetRef, EmissionCommand, ErrorCode, Provenance, Receipt, ReceiptStatus

log = logging.getLogger(__name__)

ScopeKey = tuple[int, str, str]


class RawRecord(Protocol):
    """What the persister needs of a consumed record (aiokafka's ConsumerRecord has it)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


@dataclass(frozen=True, slots=True)
class OutgoingReceipt:
    topic: str
    key: str
    receipt: Receipt


@dataclass(frozen=True, slots=True)
class OutgoingDeadLetter:
    record: RawRecord
    letter: DeadLetter


@dataclass
class BatchResult:
    receipts: list[OutgoingReceipt] = field(default_factory=list)
    events: list[AssetEvent] = field(default_factory=list)
    dead_letters: list[OutgoingDeadLetter] = field(default_factory=list)

    def count(self, status: ReceiptStatus) -> int:
        return sum(1 for r in self.receipts if r.receipt.status is status)


class BatchProcessor:
    """Validates and stores a batch. Raises StorageUnavailable (retriable) if the database is away."""

    def __init__(self, engine: AsyncEngine, verifier: TokenVerifier) -> None:
        self._engine = engine
        self._verifier = verifier

    async def process(self, records: Sequence[RawRecord]) -> BatchResult:
        result = BatchResult()
        commands: list[EmissionCommand] = []
        for record in records:
            decoded = decode(record.value)
            if isinstance(decoded, DeadLetter):
                result.dead_letters.append(OutgoingDeadLetter(record, decoded))
            elif isinstance(decoded, Rejection):
                result.receipts.append(_rejected(decoded))
            else:
                commands.append(decoded)
        if commands:
            await self._store(commands, result)
        return result

    async def _store(self, commands: list[EmissionCommand], result: BatchResult) -> None:
        async with translated(), self._engine.begin() as conn:
            assets = await assets_by_name(conn, (c.asset.name for c in commands))
            checked = [(c, validate(c, assets, self._verifier)) for c in commands]
            first_of_scope: dict[ScopeKey, NewEvent] = {}
            for _, outcome in checked:
                if isinstance(outcome, NewEvent):
                    first_of_scope.setdefault(outcome.scope_key, outcome)
            stored = await self._insert(conn, list(first_of_scope.values())) if first_of_scope else {}
        published: set[int] = set()
        for command, outcome in checked:
            if isinstance(outcome, Rejection):
                result.receipts.append(_rejected(outcome))
                continue
            event = stored.get(outcome.scope_key)
            if event is None:
                result.receipts.append(_rejected(Rejection(
                    command.command_id, command.reply_to, command.producer_id, ErrorCode.INTERNAL,
                    "the event could not be stored; retrying the same command is safe", command.asset.name)))
                continue
            first = event.inserted and first_of_scope[outcome.scope_key] is outcome
            status = ReceiptStatus.ACCEPTED if first else ReceiptStatus.DUPLICATE
            result.receipts.append(OutgoingReceipt(command.reply_to, command.producer_id, Receipt(
                correlation_id=command.command_id, status=status, event_id=event.id,
                timestamp=event.created_at, asset_name=event.asset_name, dedupe_key=event.dedupe_key)))
            if event.id not in published:
                published.add(event.id)
                result.events.append(to_asset_event(event))

    async def _insert(self, conn: AsyncConnection, events: list[NewEvent]) -> dict[ScopeKey, StoredEvent]:
        """Insert in a savepoint; if a non-transient error hits, split to isolate the bad event."""
        try:
            async with conn.begin_nested():
                return await insert_events(conn, events)
        except Exception as error:
            if is_transient(error):
                raise
            if len(events) == 1:
                log.error("event %s could not be stored: %s", events[0].command_id, error)
                return {}
            log.warning("batch insert failed, isolating the bad command: %s", error)
            half = len(events) // 2
            return {**await self._insert(conn, events[:half]), **await self._insert(conn, events[half:])}


def _rejected(rejection: Rejection) -> OutgoingReceipt:
    return OutgoingReceipt(rejection.reply_to, rejection.producer_id, Receipt(
        correlation_id=rejection.correlation_id, status=ReceiptStatus.REJECTED, asset_name=rejection.asset_name,
        error_code=rejection.code, error_message=rejection.message))


def to_asset_event(event: StoredEvent) -> AssetEvent:
    return AssetEvent(
        event_id=event.id,
        asset=AssetRef(name=event.asset_name, uri=event.asset_uri),
        extra=event.extra,
        partition_key=event.partition_key,
        partition_date=event.partition_date,
        dedupe_key=event.dedupe_key,
        command_id=event.command_id,
        source=Provenance(kind=event.source_kind, dag_id=event.dag_id, run_id=event.run_id,
                          task_id=event.task_id, map_index=event.map_index, try_number=event.try_number),
        timestamp=event.created_at,
    )
