"""The asset catalog: each registered asset with its newest event, and its newest event per partition.

`latest_per_partition` walks the distinct partition keys of one asset with a recursive skip scan
over the `(asset_id, partition_key, id)` index (one index probe per partition shown, however many
events each partition has), newest key first, so a page costs the same with 100 or 100,000 events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.assets import AssetRow
from assetbus.consumers.storage.event_log import MAX_PAGE, events_by_id
from assetbus.consumers.storage.events import EVENT_COLUMNS, StoredEvent, stored_event


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
    """The newest event of each partition of one asset, partition keys descending.

    The first page (no `before_key`) starts with the newest unpartitioned event, if there is one;
    pass the last partition key of a page as `before_key` for the next.
    """
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
