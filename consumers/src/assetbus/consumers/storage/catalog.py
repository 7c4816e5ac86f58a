"""Read-side queries for operators: stored events by asset, partition and time, newest first.

Paginated by event id (`before_id` going back, `after_id` following new ones), so a listing stays
cheap however many events are stored: both walk the `(asset_id, id)` index or the primary key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True, slots=True)
class EventRow:
    """A stored event with its asset and provenance, as an operator reads it."""

    id: int
    asset: str
    uri: str
    partition_key: str | None
    partition_date: datetime | None
    source_kind: str
    dag_id: str
    run_id: str
    task_id: str | None
    map_index: int | None
    try_number: int | None
    dedupe_key: str
    extra: dict[str, Any]
    created_at: datetime


_SELECT = """
SELECT e.id, a.name, a.uri, e.partition_key, e.partition_date, e.source_kind, e.dag_id, e.run_id, e.task_id,
       e.map_index, e.try_number, e.dedupe_key, e.extra, e.created_at
FROM asset_events e JOIN assets a ON a.id = e.asset_id
WHERE (CAST(:asset AS text) IS NULL OR a.name = :asset)
  AND (CAST(:partition AS text) IS NULL OR e.partition_key = :partition)
  AND (CAST(:since AS timestamptz) IS NULL OR e.created_at >= :since)
  AND (CAST(:before_id AS bigint) IS NULL OR e.id < :before_id)
  AND (CAST(:after_id AS bigint) IS NULL OR e.id > :after_id)
"""


async def list_events(conn: AsyncConnection, *, asset: str | None = None, partition: str | None = None,
                      since: datetime | None = None, before_id: int | None = None, after_id: int | None = None,
                      limit: int = 50, oldest_first: bool = False) -> list[EventRow]:
    """Stored events matching every filter given, newest first (oldest first with `oldest_first`)."""
    order = "ASC" if oldest_first else "DESC"
    rows = await conn.execute(text(f"{_SELECT} ORDER BY e.id {order} LIMIT :limit"),
                              {"asset": asset, "partition": partition, "since": since, "before_id": before_id,
                               "after_id": after_id, "limit": limit})
    return [EventRow(*row) for row in rows]


async def last_event_id(conn: AsyncConnection) -> int:
    """The newest stored event's id (0 when there is none): where a tail starts."""
    return int((await conn.execute(text("SELECT coalesce(max(id), 0) FROM asset_events"))).scalar_one())
