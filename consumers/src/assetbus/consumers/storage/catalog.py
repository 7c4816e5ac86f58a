"""Registered assets and their stored events read back: the asset list, the event log, the asset catalog.

Every event query is served by an index (`storage.tables`, migration 0005). `latest_per_partition` is a
recursive skip scan over `(asset_id, partition_key, id)`, newest key first: one index probe per partition
shown, so a page costs the same with 100 or 100,000 events per partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.events import EVENT_COLUMNS, StoredEvent, stored_event
from assetbus.consumers.storage.tables import assets


@dataclass(frozen=True, slots=True)
class AssetRow:
    id: int
    name: str
    uri: str
    active: bool


_COLUMNS = (assets.c.id, assets.c.name, assets.c.uri, assets.c.active)


async def register_asset(conn: AsyncConnection, name: str, uri: str) -> AssetRow:
    """Register (or re-activate) an asset. Registering the same name and URI twice is a no-op."""
    stmt = (
        insert(assets)
        .values(name=name, uri=uri, active=True)
        .on_conflict_do_update(index_elements=[assets.c.name], set_={"active": True},
                               where=assets.c.uri == uri)
        .returning(*_COLUMNS)
    )
    try:
        row = (await conn.execute(stmt)).one_or_none()
    except sa_exc.IntegrityError as error:
        raise ValueError(f"URI {uri!r} is already registered for another asset") from error
    if row is None:
        raise ValueError(f"asset {name!r} is already registered with another URI")
    return AssetRow(*row)


async def assets_by_name(conn: AsyncConnection, names: Iterable[str]) -> dict[str, AssetRow]:
    """The registered assets among `names`, by name (inactive ones included)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    rows = await conn.execute(select(*_COLUMNS).where(assets.c.name.in_(wanted)))
    return {row.name: AssetRow(*row) for row in rows}


async def list_assets(conn: AsyncConnection) -> list[AssetRow]:
    rows = await conn.execute(select(*_COLUMNS).order_by(assets.c.name))
    return [AssetRow(*row) for row in rows]


MAX_PAGE = 500
"""The largest page any listing returns, whatever is asked."""


async def list_events(conn: AsyncConnection, *, asset: str | None = None, partition_key: str | None = None,
                      since: datetime | None = None, before_id: int | None = None, after_id: int | None = None,
                      limit: int = 50) -> list[StoredEvent]:
    """Stored events matching every filter given, newest first below `before_id` (the last id of the previous
    page), or oldest first above `after_id` (a tail: the last id seen). `partition_key` needs `asset` to be
    indexed; `since` compares the storage time."""
    where: list[str] = []
    if asset is not None:
        asset_id = (await conn.execute(text("SELECT id FROM assets WHERE name = :n"), {"n": asset})).scalar()
        if asset_id is None:
            return []
        where.append(f"e.asset_id = {int(asset_id)}")  # a value, not a bind: see _PER_ASSET for why
    filters = {"e.partition_key = :partition_key": partition_key, "e.created_at >= :since": since,
               "e.id < :before_id": before_id, "e.id > :after_id": after_id}
    where += [clause for clause, value in filters.items() if value is not None]
    params = {"partition_key": partition_key, "since": since, "before_id": before_id, "after_id": after_id,
              "limit": max(1, min(limit, MAX_PAGE))}
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


@dataclass(frozen=True, slots=True)
class AssetSummary(AssetRow):
    """A registered asset, how many events it has (counted up to COUNT_CAP), and its newest one."""

    events: int
    """Stored events, or COUNT_CAP when there are at least that many (`events_capped`)."""
    latest: StoredEvent | None

    @property
    def events_capped(self) -> bool:
        return self.events >= COUNT_CAP


COUNT_CAP = 10_000
"""Events are counted per asset up to this (an index walk each): exact counts of millions cost seconds."""


_ASSETS = "SELECT a.id, a.name, a.uri, a.active FROM assets a {where} ORDER BY a.name LIMIT :limit"

_PER_ASSET = """SELECT {id} AS id,
    (SELECT count(*) FROM (SELECT 1 FROM asset_events c WHERE c.asset_id = {id} LIMIT {cap}) AS capped) AS events,
    (SELECT m.id FROM asset_events m WHERE m.asset_id = {id} ORDER BY m.id DESC LIMIT 1) AS latest_id"""
"""The asset id is written into the statement (an integer read from the database): with a bind parameter the
planner uses its generic estimate, and when one asset holds most events that estimate walks the primary key
and filters, a scan of the whole log for every small asset. With the value it picks `(asset_id, id)`."""


async def asset_summaries(conn: AsyncConnection, *, after_name: str | None = None,
                          limit: int = 100) -> list[AssetSummary]:
    """Assets by name (continuing after `after_name`), each with its event count and newest event."""
    params: dict[str, Any] = {"limit": max(1, min(limit, MAX_PAGE))}
    where = ""
    if after_name is not None:
        where, params["after"] = "WHERE a.name > :after", after_name
    assets = list(await conn.execute(text(_ASSETS.format(where=where)), params))
    if not assets:
        return []
    per_asset = " UNION ALL ".join(_PER_ASSET.format(id=int(row.id), cap=COUNT_CAP) for row in assets)
    counts = {row.id: (int(row.events), row.latest_id) for row in await conn.execute(text(per_asset))}
    latest = await events_by_id(conn, [latest_id for _, latest_id in counts.values() if latest_id is not None])
    return [AssetSummary(row.id, row.name, row.uri, row.active, counts[row.id][0], latest.get(counts[row.id][1]))
            for row in assets]


_KEYED = """
WITH RECURSIVE keys(k) AS (
    (SELECT partition_key FROM asset_events
     WHERE asset_id = :asset_id AND partition_key IS NOT NULL {start}
     ORDER BY partition_key DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT partition_key FROM asset_events
            WHERE asset_id = :asset_id AND partition_key < keys.k ORDER BY partition_key DESC LIMIT 1)
    FROM keys WHERE keys.k IS NOT NULL
)
SELECT {columns}
FROM (SELECT k FROM keys WHERE k IS NOT NULL LIMIT :limit) AS p
CROSS JOIN LATERAL (SELECT * FROM asset_events x WHERE x.asset_id = :asset_id AND x.partition_key = p.k
                    ORDER BY x.id DESC LIMIT 1) AS e
JOIN assets a ON a.id = e.asset_id
ORDER BY e.partition_key DESC
"""

_UNPARTITIONED = f"""
SELECT {EVENT_COLUMNS} FROM asset_events e JOIN assets a ON a.id = e.asset_id
WHERE e.asset_id = :asset_id AND e.partition_key IS NULL ORDER BY e.id DESC LIMIT 1
"""


async def latest_per_partition(conn: AsyncConnection, asset_id: int, *, before_key: str | None = None,
                               limit: int = 50) -> list[StoredEvent]:
    """The newest event of each partition of one asset, partition keys descending, below `before_key` (the
    last key of the previous page); the first page starts with the newest unpartitioned event, if any."""
    params: dict[str, Any] = {"asset_id": asset_id, "limit": max(1, min(limit, MAX_PAGE))}
    found: list[StoredEvent] = []
    start = ""
    if before_key is None:
        row = (await conn.execute(text(_UNPARTITIONED), {"asset_id": asset_id})).one_or_none()
        if row is not None:
            found.append(stored_event(row))
    else:
        start, params["before"] = "AND partition_key < :before", before_key
    rows = await conn.execute(text(_KEYED.format(start=start, columns=EVENT_COLUMNS)), params)
    found.extend(stored_event(row) for row in rows)
    return found
