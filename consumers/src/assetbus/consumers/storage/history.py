"""Reading stored asset events back, page by page (replay re-derives readiness from them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True, slots=True)
class HistoricEvent:
    id: int
    asset_name: str
    partition_key: str | None
    partition_date: datetime | None
    source_kind: str
    dag_id: str
    run_id: str
    task_id: str | None
    map_index: int | None
    try_number: int | None
    created_at: datetime


EVENT_COLUMNS = ("e.id, a.name, e.partition_key, e.partition_date, e.source_kind, e.dag_id, e.run_id, e.task_id, "
                 "e.map_index, e.try_number, e.created_at")
"""A `HistoricEvent`'s columns, in its fields' order, of `asset_events e JOIN assets a`."""

_FILTER = """
FROM asset_events e JOIN assets a ON a.id = e.asset_id
WHERE a.name = ANY(CAST(:assets AS text[]))
  AND (CAST(:since AS timestamptz) IS NULL OR e.partition_date >= :since)
  AND (CAST(:until AS timestamptz) IS NULL OR e.partition_date < :until)
"""


async def count_stored_events(conn: AsyncConnection, assets: Sequence[str], *, since: datetime | None = None,
                              until: datetime | None = None) -> int:
    """How many stored events of these assets (with a partition date in [since, until) when given)."""
    query = text("SELECT count(*) " + _FILTER)
    return int((await conn.execute(query, {"assets": list(assets), "since": since, "until": until})).scalar_one())


async def stored_events(conn: AsyncConnection, assets: Sequence[str], *, after_id: int = 0, limit: int = 1000,
                        since: datetime | None = None, until: datetime | None = None) -> list[HistoricEvent]:
    """The next page of stored events of these assets, in id (storage) order."""
    query = text(f"SELECT {EVENT_COLUMNS} {_FILTER} AND e.id > :after ORDER BY e.id LIMIT :limit")
    rows = await conn.execute(query, {"assets": list(assets), "since": since, "until": until, "after": after_id,
                                      "limit": limit})
    return [HistoricEvent(*row) for row in rows]
