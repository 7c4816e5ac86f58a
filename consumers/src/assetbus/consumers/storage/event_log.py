"""Reading stored asset events back: filtered, keyset-paginated, newest first (or after an id, for tails).

Paginated by event id (`before_id` going back, `after_id` following new ones), so a listing stays
cheap however many events are stored: one asset walks the `(asset_id, id)` index, the whole log the
primary key. (The same functions, with more indexes, are being written for the `/ui` page.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.events import StoredEvent

MAX_PAGE = 500
"""The largest page any listing returns, whatever is asked."""

_SELECT = """
SELECT e.id, e.asset_id, a.name, a.uri, e.dedupe_scope, e.dedupe_key, e.command_id, e.extra, e.partition_key,
       e.partition_date, e.source_kind, e.dag_id, e.run_id, e.task_id, e.map_index, e.try_number, e.created_at
FROM asset_events e JOIN assets a ON a.id = e.asset_id
"""


async def list_events(conn: AsyncConnection, *, asset: str | None = None, partition_key: str | None = None,
                      since: datetime | None = None, before_id: int | None = None, after_id: int | None = None,
                      limit: int = 50) -> list[StoredEvent]:
    """Stored events matching every filter given.

    Newest first, continuing below `before_id` (pass the last id of a page for the next one); with
    `after_id`, oldest first above it instead (a tail: pass the last id seen).
    """
    filters = {"a.name = :asset": ("asset", asset),
               "e.partition_key = :partition_key": ("partition_key", partition_key),
               "e.created_at >= :since": ("since", since),
               "e.id < :before_id": ("before_id", before_id),
               "e.id > :after_id": ("after_id", after_id)}
    where = [clause for clause, (_, value) in filters.items() if value is not None]
    params: dict[str, Any] = {name: value for name, value in filters.values() if value is not None}
    params["limit"] = max(1, min(limit, MAX_PAGE))
    order = "e.id ASC" if after_id is not None else "e.id DESC"
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = await conn.execute(text(f"{_SELECT} {clause} ORDER BY {order} LIMIT :limit"), params)
    return [StoredEvent(*row) for row in rows]


async def latest_event_id(conn: AsyncConnection) -> int:
    """The highest stored event id (0 when nothing is stored): where a live tail starts."""
    return int((await conn.execute(text("SELECT coalesce(max(id), 0) FROM asset_events"))).scalar_one())
