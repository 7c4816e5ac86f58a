"""Idempotent batch insert of asset events, the heart of "exactly one event per dedupe key": one
`INSERT … SELECT … ON CONFLICT DO NOTHING RETURNING` per batch (`insert_events`), then the originals of the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any, NamedTuple
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.errors import ConsumerError

ScopeKey = tuple[int, str, str]
"""(asset id, dedupe scope, dedupe key): unique among stored events."""


@dataclass(slots=True)  # not frozen: built per stored event, and a frozen __init__ costs 3x
class NewEvent:
    """A validated command, ready to be stored. `extra_json` is `extra` serialized once, compactly."""

    asset_id: int
    dedupe_scope: str
    dedupe_key: str
    command_id: str
    """The command id in its canonical text form."""
    extra_json: str
    partition_key: str | None
    partition_date: datetime | None
    source_kind: str
    dag_id: str
    run_id: str
    task_id: str | None
    map_index: int | None
    try_number: int | None

    @property
    def scope_key(self) -> ScopeKey:
        return (self.asset_id, self.dedupe_scope, self.dedupe_key)


class InsertedEvent(NamedTuple):
    """What the database adds to a new event: its id and storage time."""

    id: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored earlier (the original of a duplicate), read back in full."""

    id: int
    asset_id: int
    asset_name: str
    asset_uri: str
    dedupe_scope: str
    dedupe_key: str
    command_id: UUID
    extra: dict[str, Any]
    partition_key: str | None
    partition_date: datetime | None
    source_kind: str
    dag_id: str
    run_id: str
    task_id: str | None
    map_index: int | None
    try_number: int | None
    created_at: datetime


_INSERT = """
WITH inserted AS (
    INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key,
                              partition_date, source_kind, dag_id, run_id, task_id, map_index, try_number)
    SELECT r.a, s.scope, r.k, r.c, r.e, r.p, r.d, s.kind, s.dag, s.run, s.task, s.map, s.try
    FROM json_to_recordset($1::json) AS r(a bigint, s bigint, k text, c uuid, e jsonb, p text, d timestamptz)
    JOIN unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[]) WITH ORDINALITY
         AS s(scope, kind, dag, run, task, map, try, n) ON s.n = r.s
    ON CONFLICT (asset_id, dedupe_scope, dedupe_key) DO NOTHING
    RETURNING id, asset_id, dedupe_scope, dedupe_key
)
SELECT now(), array_agg(id), array_agg(asset_id), array_agg(dedupe_scope), array_agg(dedupe_key) FROM inserted
"""
"""The rows travel as one JSON text (`extra` embedded as it is), their sources (scope and emitter,
the same for all the commands of one task) once each: encoding thousands of array elements costs
the client about twice as much CPU. One row comes back however many were inserted: `created_at`
defaults to now(), the transaction's start, so it is the same for every row."""


def _envelope(events: Sequence[NewEvent]) -> tuple[str, list[list[Any]]]:
    """The rows as a JSON array, and the distinct sources as columns (referenced 1-based)."""
    sources: dict[tuple[Any, ...], int] = {}
    rows = []
    for e in events:
        source = (e.dedupe_scope, e.source_kind, e.dag_id, e.run_id, e.task_id, e.map_index, e.try_number)
        number = sources.get(source)
        if number is None:
            number = sources[source] = len(sources) + 1
        date = "null" if e.partition_date is None else f'"{e.partition_date.astimezone(UTC).isoformat()}"'
        key = "null" if e.partition_key is None else encode_basestring(e.partition_key)
        rows.append(f'{{"a":{e.asset_id},"s":{number},"k":{encode_basestring(e.dedupe_key)},"c":"{e.command_id}",'
                    f'"e":{e.extra_json},"p":{key},"d":{date}}}')
    columns = [list(column) for column in zip(*sources, strict=True)]
    return "[" + ",".join(rows) + "]", columns


EVENT_COLUMNS = """e.id, e.asset_id, a.name, a.uri, e.dedupe_scope, e.dedupe_key, e.command_id, e.extra,
       e.partition_key, e.partition_date, e.source_kind, e.dag_id, e.run_id, e.task_id, e.map_index,
       e.try_number, e.created_at"""
"""The select list `stored_event` reads (`asset_events e JOIN assets a`)."""

_FETCH = text(f"""
SELECT {EVENT_COLUMNS}
FROM unnest(CAST(:asset_id AS bigint[]), CAST(:scope AS text[]), CAST(:key AS text[])) AS k(asset_id, scope, key)
JOIN asset_events e ON e.asset_id = k.asset_id AND e.dedupe_scope = k.scope AND e.dedupe_key = k.key
JOIN assets a ON a.id = e.asset_id
""")


async def insert_events(conn: AsyncConnection, events: Sequence[NewEvent], *,
                        autocommit: bool = False) -> dict[ScopeKey, InsertedEvent]:
    """Insert what is new, in the caller's transaction; returns the new ones by scope key. `events` must not
    repeat a scope key (the caller collapses repeats within a batch first).

    The statement goes to asyncpg directly: for the thousands of rows a batch returns, SQLAlchemy's row-by-row
    result handling costs more CPU than the insert itself. The caller's transaction must have begun on the
    server (any statement through `conn` does that), unless `autocommit` (a `storage.autocommit` connection).
    """
    if not events:
        return {}
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    if driver is None or not (autocommit or driver.is_in_transaction()):
        raise ConsumerError("insert_events needs a transaction that has begun on the server")
    rows, sources = _envelope(events)
    row = await driver.fetchrow(_INSERT, rows, *sources)
    created_at, ids, asset_ids, scopes, keys = row
    if not ids:
        return {}
    keys_of = zip(asset_ids, scopes, keys, strict=True)
    return {key: InsertedEvent(event_id, created_at) for key, event_id in zip(keys_of, ids, strict=True)}


async def find_events(conn: AsyncConnection, keys: Iterable[ScopeKey]) -> dict[ScopeKey, StoredEvent]:
    """The stored events with these scope keys (missing keys are simply absent)."""
    wanted = list(keys)
    if not wanted:
        return {}
    rows = await conn.execute(_FETCH, {"asset_id": [k[0] for k in wanted], "scope": [k[1] for k in wanted],
                                       "key": [k[2] for k in wanted]})
    return {(e.asset_id, e.dedupe_scope, e.dedupe_key): e for e in map(stored_event, rows)}


def stored_event(row: Any) -> StoredEvent:
    """A StoredEvent from a row with the columns of `EVENT_COLUMNS` (asset name and URI as `name`, `uri`)."""
    extra = row.extra if isinstance(row.extra, dict) else json.loads(row.extra)
    return StoredEvent(
        id=row.id, asset_id=row.asset_id, asset_name=row.name, asset_uri=row.uri, dedupe_scope=row.dedupe_scope,
        dedupe_key=row.dedupe_key, command_id=row.command_id, extra=extra, partition_key=row.partition_key,
        partition_date=row.partition_date, source_kind=row.source_kind, dag_id=row.dag_id, run_id=row.run_id,
        task_id=row.task_id, map_index=row.map_index, try_number=row.try_number, created_at=row.created_at)


async def count_events(conn: AsyncConnection, asset_name: str | None = None) -> int:
    """How many events are stored (for one asset, or all)."""
    if asset_name is None:
        return int((await conn.execute(text("SELECT count(*) FROM asset_events"))).scalar_one())
    query = text("SELECT count(*) FROM asset_events e JOIN assets a ON a.id = e.asset_id WHERE a.name = :n")
    return int((await conn.execute(query, {"n": asset_name})).scalar_one())
