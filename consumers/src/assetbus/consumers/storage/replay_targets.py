"""A replay's stored events, read page by page, and its routed events in a temporary table (`routed_events`:
one per replay, on a connection of its own, dropped at its end), written in event-id order and read back in
target order a keyset page at a time (`scheduler.replay` says why).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


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


@dataclass(frozen=True, slots=True)
class RoutedEvent:
    """One stored event routed to one target partition (`target_key` None: the unpartitioned target)."""

    target_key: str | None
    slot: str
    event: HistoricEvent


Position = tuple[bool, str, int, str]
"""Where a page ends: (unpartitioned, target key, event id, slot), the table's order."""

START: Position = (False, "", 0, "")


@dataclass(frozen=True)
class RoutedTable:
    """The temporary table of one replay on `conn` (the connection that created it)."""

    conn: AsyncConnection
    name: str

    async def add(self, rows: Sequence[tuple[str | None, str, int]]) -> None:
        """Append (target key, slot, event id) rows with COPY, committed at once."""
        if rows:
            driver = await _driver(self.conn)
            await driver.copy_records_to_table(
                self.name, columns=("unpartitioned", "target_key", "slot", "event_id"),
                records=[(key is None, key or "", slot, event_id) for key, slot, event_id in rows])
        await self.conn.commit()

    async def index(self) -> int:
        """Index the table in target order (after the last `add`); returns how many targets it holds."""
        await self.conn.execute(text(f"CREATE INDEX ON {self.name} (unpartitioned, target_key, event_id, slot)"))
        await self.conn.execute(text(f"ANALYZE {self.name}"))
        count = await self.conn.execute(text(
            f"SELECT count(*) FROM (SELECT DISTINCT unpartitioned, target_key FROM {self.name}) AS targets"))
        targets = int(count.scalar_one())
        await self.conn.commit()
        return targets

    async def page(self, after: Position, limit: int) -> tuple[list[RoutedEvent], Position]:
        """The next `limit` routed events after `after`, ordered by target, then event id; and where they end."""
        driver = await _driver(self.conn)
        rows = await driver.fetch(
            f"SELECT t.unpartitioned, t.target_key, t.slot, {EVENT_COLUMNS} "
            f"FROM {self.name} t JOIN asset_events e ON e.id = t.event_id JOIN assets a ON a.id = e.asset_id "
            "WHERE (t.unpartitioned, t.target_key, t.event_id, t.slot) > ($1, $2, $3, $4) "
            "ORDER BY t.unpartitioned, t.target_key, t.event_id, t.slot LIMIT $5", *after, limit)
        routed = [RoutedEvent(None if row[0] else row[1], row[2], HistoricEvent(*row[3:])) for row in rows]
        if not rows:
            return routed, after
        last = rows[-1]
        return routed, (last[0], last[1], last[3], last[2])


@asynccontextmanager
async def routed_events(engine: AsyncEngine) -> AsyncIterator[RoutedTable]:
    """A fresh temporary table on a connection of its own, dropped when the block ends. Each statement commits
    at once (no transaction is held open while the replay runs); the table is named per replay, so statements
    prepared for an earlier replay's table are never reused."""
    async with engine.connect() as conn:
        table = RoutedTable(conn, f"replay_routed_{uuid.uuid4().hex}")
        await conn.execute(text(
            f'CREATE TEMPORARY TABLE {table.name} (unpartitioned boolean NOT NULL, target_key text COLLATE "C" '
            'NOT NULL, slot text COLLATE "C" NOT NULL, event_id bigint NOT NULL)'))
        await conn.commit()
        try:
            yield table
        finally:
            if not conn.invalidated:
                await conn.rollback()
                await conn.execute(text(f"DROP TABLE IF EXISTS {table.name}"))
                await conn.commit()


async def _driver(conn: AsyncConnection) -> Any:
    """The asyncpg connection under `conn` (COPY and row handling without SQLAlchemy's per-row cost)."""
    raw = await conn.get_raw_connection()
    return raw.driver_connection
