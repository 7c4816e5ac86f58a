"""The partition queue: upstream events queued per (consumer DAG, target partition), and mapping skips.

A queue row is unique per (dag, event): redelivered events are no-ops. Rows stay after their run is
created (`run_id` set): they are the run's history, and they keep replay from queueing again. An
event that makes its target ready on its own gets no row: its run records it (`consumer_runs.event_id`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.catalog import MAX_PAGE
from assetbus.consumers.storage.tables import UNPARTITIONED


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class NewQueueEntry:
    dag_id: str
    event_id: int
    asset_name: str
    target_key: str | None
    target_date: datetime | None
    slot: str
    event: str
    """The triggering event as JSON text (what the readiness signal will carry)."""
    run_id: str | None = None
    """The run that consumes it already, or None (pending)."""


@dataclass(slots=True, kw_only=True)
class QueueRow(NewQueueEntry):
    id: int


@dataclass(frozen=True, slots=True)
class NewSkip:
    dag_id: str
    event_id: int
    asset_name: str
    partition_key: str | None
    reason: str
    detail: str


def stored_key(key: str | None) -> str:
    return UNPARTITIONED if key is None else key


def loaded_key(key: str) -> str | None:
    return None if key == UNPARTITIONED else key


TARGET_LOCKS = ("(SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) "
                "FROM (SELECT k FROM unnest(CAST(:keys AS text[])) AS k ORDER BY k) AS ordered)")
"""Locks the sorted `:keys` (see `lock_key`); one order everywhere, so no deadlocks."""


def lock_key(dag_id: str, key: str | None) -> str:
    return f"{dag_id}\x1f{stored_key(key)}"


async def lock_targets(conn: AsyncConnection, targets: Iterable[tuple[str, str | None]]) -> None:
    """Transaction-scoped advisory locks on target partitions (`TARGET_LOCKS`): two schedulers (or a scheduler
    and a replay) then see each other's queued entries for a target."""
    keys = sorted({lock_key(dag, key) for dag, key in targets})
    if keys:
        await conn.execute(text(f"SELECT {TARGET_LOCKS}"), {"keys": keys})


_PENDING = text("""
SELECT q.id, q.dag_id, q.event_id, q.asset_name, q.target_key, q.target_date, q.slot, q.event::text AS event, q.run_id
FROM unnest(CAST(:dag AS text[]), CAST(:key AS text[])) AS t(dag_id, target_key)
JOIN partition_queue q ON q.dag_id = t.dag_id AND q.target_key = t.target_key AND q.run_id IS NULL
ORDER BY q.id
""")


async def pending_entries(conn: AsyncConnection,
                          targets: Iterable[tuple[str, str | None]]) -> dict[tuple[str, str | None], list[QueueRow]]:
    """The pending (not yet run) entries of each target partition, in arrival order."""
    wanted = sorted({(dag, stored_key(key)) for dag, key in targets})
    found: dict[tuple[str, str | None], list[QueueRow]] = {(dag, loaded_key(key)): [] for dag, key in wanted}
    if not wanted:
        return found
    rows = await conn.execute(_PENDING, {"dag": [d for d, _ in wanted], "key": [k for _, k in wanted]})
    for row in rows:
        queued = _row(row)
        found[(queued.dag_id, queued.target_key)].append(queued)
    return found


async def pending_for_dag(conn: AsyncConnection, dag_id: str) -> list[QueueRow]:
    """Every pending entry of one DAG (what it still waits for), in arrival order."""
    rows = await conn.execute(text(
        "SELECT id, dag_id, event_id, asset_name, target_key, target_date, slot, event::text AS event, run_id "
        "FROM partition_queue WHERE dag_id = :dag AND run_id IS NULL ORDER BY id"), {"dag": dag_id})
    return [_row(row) for row in rows]


async def insert_skips(conn: AsyncConnection, skips: Sequence[NewSkip]) -> int:
    """Record events a mapping could not map (once per DAG and event). Returns how many were new."""
    if not skips:
        return 0
    rows = await conn.execute(text("""
        INSERT INTO mapping_skips (dag_id, event_id, asset_name, partition_key, reason, detail)
        SELECT * FROM unnest(CAST(:dag AS text[]), CAST(:event_id AS bigint[]), CAST(:asset AS text[]),
                             CAST(:key AS text[]), CAST(:reason AS text[]), CAST(:detail AS text[]))
        ON CONFLICT (dag_id, event_id) DO NOTHING RETURNING id"""), {
        "dag": [s.dag_id for s in skips], "event_id": [s.event_id for s in skips],
        "asset": [s.asset_name for s in skips], "key": [s.partition_key for s in skips],
        "reason": [s.reason for s in skips], "detail": [s.detail for s in skips]})
    return len(rows.all())


@dataclass(frozen=True, slots=True)
class SkipRow(NewSkip):
    created_at: datetime


async def list_skips(conn: AsyncConnection, dag_id: str | None = None, limit: int = 50) -> list[SkipRow]:
    query = ("SELECT dag_id, event_id, asset_name, partition_key, reason, detail, created_at FROM mapping_skips "
             + ("WHERE dag_id = :dag " if dag_id else "") + "ORDER BY id DESC LIMIT :limit")
    rows = await conn.execute(text(query), {"dag": dag_id, "limit": limit})
    return [SkipRow(*row) for row in rows]


def _row(row: Any) -> QueueRow:
    return QueueRow(row.dag_id, row.event_id, row.asset_name, loaded_key(row.target_key), row.target_date, row.slot,
                    row.event, row.run_id, id=row.id)


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
    """Target partitions of a DAG with pending entries (no run yet), keys ascending (None, unpartitioned, first);
    pass the last key of a page as `after_key` for the next page. A recursive skip scan over the partial index
    `ix_partition_queue_pending`: one probe per partition shown. What each still lacks is `api.ui.waiting`'s."""
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
