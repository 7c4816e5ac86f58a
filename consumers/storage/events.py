"""Idempotent batch insert of asset events: the heart of "exactly one event per dedupe key"."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True, slots=True)
class NewEvent:
    """A validated command, ready to be stored."""

    asset_id: int
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

    @property
    def scope_key(self) -> tuple[int, str, str]:
        return (self.asset_id, self.dedupe_scope, self.dedupe_key)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored, with whether this batch inserted it or found it already there."""

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
    inserted: bool

    @property
    def scope_key(self) -> tuple[int, str, str]:
        return (self.asset_id, self.dedupe_scope, self.dedupe_key)


_INSERT = text("""
INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key,
                          partition_date, source_kind, dag_id, run_id, task_id, map_index, try_number)
SELECT * FROM unnest(CAST(:asset_id AS bigint[]), CAST(:scope AS text[]), CAST(:key AS text[]),
                     CAST(:command_id AS uuid[]), CAST(:extra AS jsonb[]), CAST(:pkey AS text[]),
                     CAST(:pdate AS timestamptz[]), CAST(:kind AS text[]), CAST(:dag AS text[]),
                     CAST(:run AS text[]), CAST(:task AS text[]), CAST(:map AS int[]), CAST(:try AS int[]))
ON CONFLICT (asset_id, dedupe_scope, dedupe_key) DO NOTHING
RETURNING id
""")

_FETCH = text("""
SELECT e.id, e.asset_id, a.name, a.uri, e.dedupe_scope, e.dedupe_key, e.command_id, e.extra,
       e.partition_key, e.partition_date, e.source_kind, e.dag_id, e.run_id, e.task_id, e.map_index,
       e.try_number, e.created_at
FROM unnest(CAST(:asset_id AS bigint[]), CAST(:scope AS text[]), CAST(:key AS text[])) AS k(asset_id, scope, key)
JOIN asset_events e ON e.asset_id = k.asset_id AND e.dedupe_scope = k.scope AND e.dedupe_key = k.key
JOIN assets a ON a.id = e.asset_id
""")


async def insert_events(conn: AsyncConnection, events: Sequence[NewEvent]) -> dict[tuple[int, str, str], StoredEvent]:
    """Insert what is new, find the originals of the rest; all by dedupe scope, in the caller's transaction.

    `events` must not repeat a scope key (the caller collapses repeats within a batch first).
    Returns every event of the batch by scope key; `inserted` tells new from original.
    """
    if not events:
        return {}
    params = {
        "asset_id": [e.asset_id for e in events],
        "scope": [e.dedupe_scope for e in events],
        "key": [e.dedupe_key for e in events],
        "command_id": [e.command_id for e in events],
        "extra": [json.dumps(e.extra, separators=(",", ":")) for e in events],
        "pkey": [e.partition_key for e in events],
        "pdate": [e.partition_date for e in events],
        "kind": [e.source_kind for e in events],
        "dag": [e.dag_id for e in events],
        "run": [e.run_id for e in events],
        "task": [e.task_id for e in events],
        "map": [e.map_index for e in events],
        "try": [e.try_number for e in events],
    }
    inserted_ids = set((await conn.execute(_INSERT, params)).scalars())
    rows = await conn.execute(_FETCH, {"asset_id": params["asset_id"], "scope": params["scope"],
                                       "key": params["key"]})
    stored: dict[tuple[int, str, str], StoredEvent] = {}
    for row in rows:
        extra = row.extra if isinstance(row.extra, dict) else json.loads(row.extra)
        event = StoredEvent(
            id=row.id, asset_id=row.asset_id, asset_name=row.name, asset_uri=row.uri, dedupe_scope=row.dedupe_scope,
            dedupe_key=row.dedupe_key, command_id=row.command_id, extra=extra, partition_key=row.partition_key,
            partition_date=row.partition_date, source_kind=row.source_kind, dag_id=row.dag_id, run_id=row.run_id,
            task_id=row.task_id, map_index=row.map_index, try_number=row.try_number, created_at=row.created_at,
            inserted=row.id in inserted_ids)
        stored[event.scope_key] = event
    return stored


async def count_events(conn: AsyncConnection, asset_name: str | None = None) -> int:
    """How many events are stored (for one asset, or all)."""
    if asset_name is None:
        return int((await conn.execute(text("SELECT count(*) FROM asset_events"))).scalar_one())
    query = text("SELECT count(*) FROM asset_events e JOIN assets a ON a.id = e.asset_id WHERE a.name = :n")
    return int((await conn.execute(query, {"n": asset_name})).scalar_one())
