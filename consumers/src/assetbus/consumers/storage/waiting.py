"""Partitions still waiting: per consumer DAG, the target partitions with queued events but no run yet.

`waiting_targets` walks the distinct pending target keys of one DAG with a recursive skip scan
over the partial index `ix_partition_queue_pending (dag_id, target_key) WHERE run_id IS NULL`; the
queued entries of a page of targets come from `queue.pending_entries`. What each target still
lacks is the scheduler's to say (`assetbus.consumers.api.ui.waiting`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.event_log import MAX_PAGE
from assetbus.consumers.storage.queue import loaded_key, stored_key

_TARGETS = """
WITH RECURSIVE keys(k) AS (
    (SELECT target_key FROM partition_queue
     WHERE dag_id = :dag AND run_id IS NULL {start} ORDER BY target_key LIMIT 1)
    UNION ALL
    SELECT (SELECT target_key FROM partition_queue
            WHERE dag_id = :dag AND run_id IS NULL AND target_key > keys.k ORDER BY target_key LIMIT 1)
    FROM keys WHERE keys.k IS NOT NULL
)
SELECT k FROM keys WHERE k IS NOT NULL LIMIT :limit
"""


async def waiting_targets(conn: AsyncConnection, dag_id: str, *, after_key: str | None = None,
                          limit: int = 50) -> list[str | None]:
    """Target partitions of a DAG with pending entries, keys ascending (None, unpartitioned, first).

    Pass the last key of a page as `after_key` for the next page.
    """
    params: dict[str, Any] = {"dag": dag_id, "limit": max(1, min(limit, MAX_PAGE))}
    start = ""
    if after_key is not None:
        start, params["after"] = "AND target_key > :after", stored_key(after_key)
    rows = await conn.execute(text(_TARGETS.format(start=start)), params)
    return [loaded_key(key) for key in rows.scalars()]


async def waiting_counts(conn: AsyncConnection) -> dict[str, tuple[int, int]]:
    """dag_id → (target partitions waiting, events queued for them), for DAGs with anything pending."""
    rows = await conn.execute(text("SELECT dag_id, count(DISTINCT target_key) AS targets, count(*) AS events "
                                   "FROM partition_queue WHERE run_id IS NULL GROUP BY dag_id"))
    return {row.dag_id: (int(row.targets), int(row.events)) for row in rows}
