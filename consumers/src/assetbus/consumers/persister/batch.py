"""Records in, receipts + asset events + dead letters out, in two stages the app overlaps: `prepare` needs no
database (decode, then `check`: token, scope, publication policy, provenance, partitions, limits, reply
address) and `store` is one transaction per chunk (`resolve` matches the registered asset, then the idempotent
insert and the originals of the duplicates). Nothing here produces to Kafka: the app publishes the result,
then commits offsets.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, NamedTuple

from opentelemetry.context import Context
from pydantic_core import PydanticSerializationError, to_json
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.auth import TokenError
from assetbus.consumers.auth.cache import CachedTokenVerifier, VerifiedToken
from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.storage import (
    AssetRow,
    InsertedEvent,
    NewEvent,
    ScopeKey,
    StoredEvent,
    assets_by_name,
    autocommit,
    find_events,
    insert_events,
    is_transient,
    transaction,
)
from assetbus.producers.kafka.types import KeyedRecord
from assetbus.producers.tracing import context_of, span_headers
from assetbus.schemas import (
    EXTRA_MAX_BYTES,
    SCOPE_EMIT,
    DeadLetterReason,
    ErrorCode,
    Provenance,
    ReceiptStatus,
    SourceKind,
    Topics,
)
from assetbus.schemas import deadletters as dlq
from assetbus.schemas.codecs import (
    CommandView,
    DeadLetter,
    Fragments,
    Rejection,
    event_bytes,
    json_datetime,
    read_command,
    receipt_bytes,
    rejection_bytes,
)

log = logging.getLogger("assetbus.persister")

YIELD_EVERY = 16
"""Records checked between two yields to the event loop: `prepare` is CPU work meant to overlap the
transactions in flight, and each of their round trips needs the loop (a yield costs ~10 µs)."""


DEFAULT_SCOPE = "command"
"""Dedupe scope of commands without an explicit dedupe key: their command id is the key."""


def serialize_extra(extra: dict[str, Any]) -> str:
    """Compact JSON of `extra`; raises ValueError for NaN and infinities (JSON cannot carry them). pydantic's
    serializer is 6x faster than `json.dumps` but writes them as bare words: when those appear, the strict
    serializer decides."""
    fast = to_json(extra)
    if b"NaN" in fast or b"Infinity" in fast:
        return json.dumps(extra, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return fast.decode()


def reject(command: CommandView, code: ErrorCode, message: str) -> Rejection:
    return Rejection(command.command_id, command.reply_to, command.producer_id, code, message, command.asset_name)


def check(command: CommandView, tokens: CachedTokenVerifier) -> tuple[VerifiedToken, str] | Rejection:
    """The token's provenance and `extra` as compact JSON, if the command passes the rules that need
    no database. Never raises."""
    try:
        verified = tokens.verify(command.token)
    except TokenError as error:
        return reject(command, ErrorCode(error.code) if error.code else ErrorCode.UNAUTHORIZED, error.reason)
    if verified.source != command.source:
        return reject(command, ErrorCode.UNAUTHORIZED, "the body claims another source than the token names")
    if SCOPE_EMIT not in verified.claims.scopes:
        return reject(command, ErrorCode.INSUFFICIENT_SCOPE, f"the token lacks scope {SCOPE_EMIT!r}")
    if not verified.claims.may_publish(command.asset_name, command.asset_uri):
        return reject(command, ErrorCode.ASSET_NOT_DECLARED,
                      f"asset {command.asset_name!r} ({command.asset_uri}) is not declared in the token's "
                      f"publication policy: {', '.join(verified.claims.declared()) or 'none'}"[:1000])
    if command.partition_date is not None:
        if command.partition_key is None:
            return reject(command, ErrorCode.INVALID_PARTITION, "partition_date requires partition_key")
        if command.partition_date.utcoffset() is None:
            return reject(command, ErrorCode.INVALID_PARTITION, "partition_date must be time-zone aware")
    try:
        extra_json = serialize_extra(command.extra)
    except (ValueError, TypeError, PydanticSerializationError) as error:
        return reject(command, ErrorCode.INVALID_COMMAND, f"extra is not storable JSON: {error}"[:500])
    size = len(extra_json) if extra_json.isascii() else len(extra_json.encode())
    if size > EXTRA_MAX_BYTES:
        return reject(command, ErrorCode.EXTRA_TOO_LARGE, f"extra is {size} bytes; the limit is {EXTRA_MAX_BYTES}")
    return verified, extra_json


def dedupe_scope(command: CommandView, verified: VerifiedToken) -> tuple[str, str]:
    """(scope, key): an explicit key lives in the emitter's scope; without one, the command id is the key."""
    if command.dedupe_key:
        return verified.dedupe_scope, command.dedupe_key
    return DEFAULT_SCOPE, command.command_id_text


def resolve(command: CommandView, verified: VerifiedToken, extra_json: str,
            assets: dict[str, AssetRow]) -> NewEvent | Rejection:
    """The event to store, if the asset is registered and active under this name *and* URI."""
    asset = assets.get(command.asset_name)
    if asset is None or not asset.active or asset.uri != command.asset_uri:
        return reject(command, ErrorCode.ASSET_NOT_FOUND,
                      f"no active asset is registered with name {command.asset_name!r} and URI "
                      f"{command.asset_uri!r}"[:1000])
    kind, dag_id, run_id, task_id, map_index, try_number = verified.source
    scope, key = dedupe_scope(command, verified)
    return NewEvent(
        asset_id=asset.id,
        dedupe_scope=scope,
        dedupe_key=key,
        command_id=command.command_id_text,
        extra_json=extra_json,
        partition_key=command.partition_key,
        partition_date=command.partition_date,
        source_kind=kind,
        dag_id=dag_id,
        run_id=run_id,
        task_id=task_id,
        map_index=map_index,
        try_number=try_number,
    )


class Outgoing(NamedTuple):
    """One record to produce: a receipt, an asset event, or a dead letter."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


_outgoing = functools.partial(tuple.__new__, Outgoing)
"""`Outgoing` from a 4-tuple without the Python-level `__new__` of named tuples (hot path)."""


@dataclass
class BatchResult:
    """Everything to publish for a batch, and what happened to its records."""

    receipts: list[Outgoing] = field(default_factory=list)
    events: list[Outgoing] = field(default_factory=list)
    dead_letters: list[Outgoing] = field(default_factory=list)
    statuses: Counter[ReceiptStatus] = field(default_factory=Counter)
    rejections: Counter[ErrorCode] = field(default_factory=Counter)
    dead_letter_reasons: Counter[DeadLetterReason] = field(default_factory=Counter)
    db_seconds: float = 0.0

    def outgoing(self) -> Iterable[Outgoing]:
        return itertools.chain(self.events, self.receipts, self.dead_letters)

    def merge(self, other: BatchResult) -> None:
        """Add `other` to this result, field by field (lists and counters in place)."""
        for f in fields(self):
            total = getattr(self, f.name)
            total += getattr(other, f.name)
            setattr(self, f.name, total)

    def reject(self, rejection: Rejection) -> None:
        self.receipts.append(Outgoing(rejection.reply_to, rejection.producer_id.encode(),
                                      rejection_bytes(rejection)))
        self.statuses[ReceiptStatus.REJECTED] += 1
        self.rejections[rejection.code] += 1

    def dead_letter(self, record: KeyedRecord, letter: DeadLetter, dlq_topic: str) -> None:
        log.warning("dead letter", extra={"reason": letter.reason.value, "error": letter.detail,
                                          "source_topic": record.topic, "source_partition": record.partition,
                                          "source_offset": record.offset})
        headers = (
            (dlq.REASON, letter.reason.value.encode()),
            (dlq.ERROR, letter.detail.encode("utf-8", "replace")),
            (dlq.SOURCE_TOPIC, record.topic.encode()),
            (dlq.SOURCE_PARTITION, str(record.partition).encode()),
            (dlq.SOURCE_OFFSET, str(record.offset).encode()),
        )
        self.dead_letters.append(Outgoing(dlq_topic, record.key, record.value, headers))
        self.dead_letter_reasons[letter.reason] += 1


@dataclass
class Prepared:
    """A chunk after the checks that need no database: commands still to store, and answers so far."""

    commands: list[tuple[CommandView, VerifiedToken, str]]
    result: BatchResult
    traces: dict[str, Context] = field(default_factory=dict)
    """The trace context each traced command's record carried, by command id."""

    def scopes(self) -> set[tuple[str, str, str]]:
        """(asset name, dedupe scope, dedupe key) of each command: two chunks that share one must be
        stored one after the other, so that the earlier record is the one accepted."""
        return {(c.asset_name, *dedupe_scope(c, v)) for c, v, _ in self.commands}


MAX_CACHED = 100_000
"""More assets than this and the asset cache starts again from empty (memory stays bounded)."""


class AssetCache:
    """The registered assets, the active ones cached: unknown and inactive names are asked every time.

    A registered asset never changes: registering its name again with another URI is refused, and
    nothing deactivates an asset. So an active (name, id, URI) row, once read, is still true, and the
    persister need not ask PostgreSQL for it on every chunk (a round trip per transaction). A name not
    found, or found inactive, is looked up again on the next chunk that uses it, so an asset registered
    a moment ago is matched at once. If asset deactivation is ever added, this cache must learn of it.
    """

    def __init__(self) -> None:
        self._active: dict[str, AssetRow] = {}

    async def get(self, conn: AsyncConnection, names: Collection[str]) -> dict[str, AssetRow]:
        """The registered assets among `names`, by name (as `assets_by_name`)."""
        cached = self._active
        found = {name: cached[name] for name in names if name in cached}
        missing = [name for name in names if name not in found]
        if missing:
            fresh = await assets_by_name(conn, missing)
            if len(cached) + len(fresh) > MAX_CACHED:
                cached.clear()
            found.update(fresh)
            cached.update((name, row) for name, row in fresh.items() if row.active)
        return found


class BatchProcessor:
    """Validates and stores records. `store` raises StorageUnavailable (retriable) if the database is away.
    `missing_topics`: given reply topics, the ones that do not exist (their commands cannot be answered)."""

    def __init__(self, engine: AsyncEngine, tokens: CachedTokenVerifier, topics: Topics,
                 missing_topics: Callable[[set[str]], Awaitable[set[str]]]) -> None:
        self._engine = engine
        self._tokens = tokens
        self._topics = topics
        self._missing_topics = missing_topics
        self._fragments = Fragments()
        self._assets = AssetCache()

    async def prepare(self, records: Sequence[KeyedRecord]) -> Prepared:
        result = BatchResult()
        decoded: list[tuple[KeyedRecord, CommandView | Rejection]] = []
        for i, record in enumerate(records):
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await asyncio.sleep(0)  # let the transactions in flight take their next step
            outcome = read_command(record.value)
            if isinstance(outcome, DeadLetter):
                result.dead_letter(record, outcome, self._topics.emissions_dlq)
            else:
                decoded.append((record, outcome))
        missing = await self._missing_topics({outcome.reply_to for _, outcome in decoded})
        commands: list[tuple[CommandView, VerifiedToken, str]] = []
        traces: dict[str, Context] = {}
        for record, outcome in decoded:
            if outcome.reply_to in missing:
                letter = DeadLetter(DeadLetterReason.NO_REPLY_ADDRESS,
                                    f"reply topic {outcome.reply_to!r} does not exist")
                result.dead_letter(record, letter, self._topics.emissions_dlq)
            elif isinstance(outcome, Rejection):
                result.reject(outcome)
            else:
                checked = check(outcome, self._tokens)
                if isinstance(checked, Rejection):
                    result.reject(checked)
                else:
                    commands.append((outcome, *checked))
                    context = context_of(getattr(record, "headers", None))
                    if context is not None:
                        traces[outcome.command_id_text] = context
        return Prepared(commands, result, traces)

    async def store(self, prepared: Prepared, published: set[int]) -> BatchResult:
        """One transaction for the chunk; then the receipts and events of what it stored or found. `published`:
        the ids of the events the batch publishes already (each goes out once per batch)."""
        result, commands = prepared.result, prepared.commands
        if not commands:
            return result
        started = time.perf_counter()
        try:
            stored = await self._transaction(commands, isolate=False)
        except StorageUnavailable:
            raise
        except Exception as error:  # a value PostgreSQL refuses: find it, store the rest
            log.warning("chunk insert failed; storing it again with each bad command isolated",
                        extra={"error": f"{type(error).__name__}: {error}"[:500]})
            stored = await self._transaction(commands, isolate=True)
        result.db_seconds += time.perf_counter() - started
        self._answer(*stored, published, result, prepared.traces)
        return result

    async def _transaction(self, commands: list[tuple[CommandView, VerifiedToken, str]], *, isolate: bool) -> tuple[
            list[tuple[CommandView, VerifiedToken, NewEvent | Rejection]], dict[ScopeKey, NewEvent],
            dict[ScopeKey, InsertedEvent], dict[ScopeKey, StoredEvent]]:
        """Store a chunk. Normally one round trip: assets come from the cache and the insert is one
        statement on an autocommit connection (atomic, committed when it returns). Isolating bad
        commands needs savepoints, so that path runs in a transaction."""
        names = {c.asset_name for c, _, _ in commands}
        async with transaction(self._engine) if isolate else autocommit(self._engine) as conn:
            assets = await self._assets.get(conn, names)
            resolved = [(c, v, resolve(c, v, extra, assets)) for c, v, extra in commands]
            first_of_scope: dict[ScopeKey, NewEvent] = {}
            for _, _, outcome in resolved:
                if isinstance(outcome, NewEvent):
                    first_of_scope.setdefault(outcome.scope_key, outcome)
            events = list(first_of_scope.values())
            if isolate:
                inserted = await self._insert_isolating(conn, events)
            else:
                inserted = await insert_events(conn, events, autocommit=True)
            originals = await find_events(conn, (k for k in first_of_scope if k not in inserted))
        return resolved, first_of_scope, inserted, originals

    def _answer(self, resolved: list[tuple[CommandView, VerifiedToken, NewEvent | Rejection]],
                first_of_scope: dict[ScopeKey, NewEvent], inserted: dict[ScopeKey, InsertedEvent],
                originals: dict[ScopeKey, StoredEvent], published: set[int], result: BatchResult,
                traces: dict[str, Context] | None = None) -> None:
        """Receipts for every command, and one asset event per scope key (the hot loop of the service).

        A command whose event is stored is `accepted` when that event is its own (stored by this record or by
        an earlier delivery of the same command id: a redelivery or a resend gets the first answer again),
        `duplicate` when another command stored it under the same dedupe key. A traced command's receipt and
        event carry the context of an `assetbus store` span, a child of its emission's.
        """
        fragments, events_topic = self._fragments, self._topics.asset_events
        receipts, events = result.receipts, result.events
        accepted = duplicate = 0
        last_time: datetime | None = None
        timestamp_json = "null"
        for command, verified, event in resolved:
            if isinstance(event, Rejection):
                result.reject(event)
                continue
            key = event.scope_key
            new = inserted.get(key)
            original = originals.get(key) if new is None else None
            command_id = command.command_id_text
            if new is not None:
                own = first_of_scope[key].command_id == command_id
                event_id, timestamp, asset_name = new.id, new.created_at, command.asset_name
            elif original is not None:
                own = str(original.command_id) == command_id
                event_id, timestamp, asset_name = original.id, original.created_at, original.asset_name
            else:
                result.reject(reject(command, ErrorCode.INTERNAL,
                                     "the event could not be stored; retrying the same command is safe"))
                continue
            if own:
                accepted += 1
            else:
                duplicate += 1
            traced = traces.get(command_id) if traces else None
            headers = span_headers("assetbus store", traced) if traced is not None else ()
            if timestamp != last_time:
                last_time, timestamp_json = timestamp, json_datetime(timestamp)
            receipts.append(_outgoing((command.reply_to, command.producer_id.encode(), receipt_bytes(
                command_id, "accepted" if own else "duplicate", event_id, timestamp_json, asset_name,
                event.dedupe_key), headers)))
            if event_id in published:
                continue
            published.add(event_id)
            if original is not None:
                value = _stored_event_bytes(original, fragments)
            else:
                value = event_bytes(event_id, fragments.asset(command.asset_name, command.asset_uri),
                                           event.extra_json, command.partition_key, command.partition_date,
                                           event.dedupe_key, command_id, verified.source_json, timestamp_json)
            events.append(_outgoing((events_topic, asset_name.encode(), value, headers)))
        result.statuses[ReceiptStatus.ACCEPTED] += accepted
        result.statuses[ReceiptStatus.DUPLICATE] += duplicate

    async def _insert_isolating(self, conn: AsyncConnection,
                                events: list[NewEvent]) -> dict[ScopeKey, InsertedEvent]:
        """Insert in a savepoint; if a non-transient error hits, split to isolate the bad event."""
        if not events:
            return {}
        try:
            async with conn.begin_nested():
                return await insert_events(conn, events)
        except Exception as error:
            if is_transient(error):
                raise
            if len(events) == 1:
                log.error("event could not be stored", extra={"command_id": str(events[0].command_id),
                                                              "error": str(error)[:500]})
                return {}
            half = len(events) // 2
            return {**await self._insert_isolating(conn, events[:half]),
                    **await self._insert_isolating(conn, events[half:])}


def _stored_event_bytes(event: StoredEvent, fragments: Fragments) -> bytes:
    """The asset event of an event stored earlier (republished unchanged for a duplicate)."""
    source = Provenance(kind=SourceKind(event.source_kind), dag_id=event.dag_id, run_id=event.run_id,
                        task_id=event.task_id, map_index=event.map_index, try_number=event.try_number)
    return event_bytes(event.id, fragments.asset(event.asset_name, event.asset_uri), to_json(event.extra).decode(),
                       event.partition_key, event.partition_date, event.dedupe_key, str(event.command_id),
                       source.model_dump_json(), fragments.time(event.created_at))
