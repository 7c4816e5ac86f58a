"""Reading stored asset events back: filtered, keyset-paginated, newest first (or after an id, for tails).

Every query here is served by an index (see migration 0005): the primary key for the whole log,
`(asset_id, partition_key, id)` for one asset or one of its partitions, `created_at` for `since`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.events import EVENT_COLUMNS, StoredEvent, stored_event

MAX_PAGE = 500
"""The largest page any listing returns, whatever is asked."""


async def list_events(conn: AsyncConnection, *, asset: str | None = None, partition_key: str | None = None,
                      since: datetime | None = None, before_id: int | None = None, after_id: int | None = None,
                      limit: int = 50) -> list[StoredEvent]:
    """Stored events matching every filter given.

    Newest first, continuing below `before_id` (pass the last id of a page for the next one); with
    `after_id`, oldest first above it instead (a tail: pass the last id seen). `partition_key` needs
    `asset` to be indexed; `since` compares the storage time.
    """
    where: list[str] = []
    if asset is not None:
        asset_id = (await conn.execute(text("SELECT id FROM assets WHERE name = :n"), {"n": asset})).scalar()
        if asset_id is None:
            return []
        where.append(f"e.asset_id = {int(asset_id)}")  # a value, not a bind: see catalog._PER_ASSET for why
    filters = {"e.partition_key = :partition_key": ("partition_key", partition_key),
               "e.created_at >= :since": ("since", since),
               "e.id < :before_id": ("before_id", before_id),
               "e.id > :after_id": ("after_id", after_id)}
    where += [clause for clause, (_, value) in filters.items() if value is not None]
    params: dict[str, Any] = {name: value for name, value in filters.values() if value is not None}
    params["limit"] = max(1, min(limit, MAX_PAGE))
    order = "e.id ASC" if after_id is not None else "e.id DESC"
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = await conn.execute(text(f"SELECT {EVENT_COLUMNS} FROM asset_events e JOIN assets a ON a.id = e.asset_id "
                                   f"{clause} ORDER BY {order} LIMIT :limit"), params)
    return [stored_event(row) for row in rows]


async def events_by_id(conn: AsyncConnection, ids: Iterable[int]) -> dict[int, StoredEvent]:
    """The stored events with these ids (unknown ids are absent)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = await conn.execute(text(f"SELECT {EVENT_COLUMNS} FROM asset_events e JOIN assets a ON a.id = e.asset_id "
                                   "WHERE e.id = ANY(CAST(:ids AS bigint[]))"), {"ids": wanted})
    return {event.id: event for event in map(stored_event, rows)}


async def latest_event_id(conn: AsyncConnection) -> int:
    """The highest stored event id (0 when nothing is stored): where a live tail starts."""
    return int((await conn.execute(text("SELECT coalesce(max(id), 0) FROM asset_events"))).scalar_one())
