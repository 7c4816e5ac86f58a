"""Queries on consumer DAG definitions (`assetbus dags sync|list`, the scheduler's DAG index)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.tables import consumer_dags


class SyncChange(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    REACTIVATED = "reactivated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class DagRow:
    """A `consumer_dags` row (its columns in order)."""

    dag_id: str
    fileloc: str
    definition: dict[str, Any]
    fingerprint: str
    coalesce: bool
    active: bool
    created_at: datetime
    updated_at: datetime


_UPSERT = text("""
WITH before AS (SELECT active FROM consumer_dags WHERE dag_id = :dag_id)
INSERT INTO consumer_dags (dag_id, fileloc, definition, fingerprint, coalesce, active)
VALUES (:dag_id, :fileloc, CAST(:definition AS jsonb), :fingerprint, :coalesce, true)
ON CONFLICT (dag_id) DO UPDATE
   SET fileloc = EXCLUDED.fileloc, definition = EXCLUDED.definition, fingerprint = EXCLUDED.fingerprint,
       coalesce = EXCLUDED.coalesce, active = true, updated_at = now()
 WHERE consumer_dags.fingerprint <> EXCLUDED.fingerprint OR consumer_dags.fileloc <> EXCLUDED.fileloc
       OR NOT consumer_dags.active
RETURNING (SELECT active FROM before) AS was_active
""")


async def upsert_dag(conn: AsyncConnection, dag_id: str, fileloc: str, definition_json: str, fingerprint: str,
                     coalesce: bool) -> SyncChange:
    """Create or update a definition (and activate it). Unchanged definitions are left alone."""
    row = (await conn.execute(_UPSERT, {"dag_id": dag_id, "fileloc": fileloc, "definition": definition_json,
                                        "fingerprint": fingerprint, "coalesce": coalesce})).one_or_none()
    if row is None:
        return SyncChange.UNCHANGED
    if row.was_active is None:
        return SyncChange.CREATED
    return SyncChange.UPDATED if row.was_active else SyncChange.REACTIVATED


_REGISTER = text("""
INSERT INTO consumer_dags (dag_id, fileloc, definition, fingerprint, coalesce, active)
VALUES (:dag_id, :fileloc, CAST(:definition AS jsonb), :fingerprint, :coalesce, false)
ON CONFLICT (dag_id) DO UPDATE
   SET definition = EXCLUDED.definition, fingerprint = EXCLUDED.fingerprint, coalesce = EXCLUDED.coalesce,
       updated_at = now()
 WHERE consumer_dags.fileloc = EXCLUDED.fileloc AND consumer_dags.fingerprint <> EXCLUDED.fingerprint
RETURNING (xmax = 0) AS inserted
""")


async def register_dag(conn: AsyncConnection, dag_id: str, fileloc: str, definition_json: str, fingerprint: str,
                       coalesce: bool) -> SyncChange:
    """Store a definition without activating it: a new one is inactive until `upsert_dag` activates it, an
    existing one of the same `fileloc` keeps its state (an active one changes at once). A row of another
    `fileloc` is left alone (UNCHANGED: check the owner first)."""
    row = (await conn.execute(_REGISTER, {"dag_id": dag_id, "fileloc": fileloc, "definition": definition_json,
                                          "fingerprint": fingerprint, "coalesce": coalesce})).one_or_none()
    if row is None:
        return SyncChange.UNCHANGED
    return SyncChange.CREATED if row.inserted else SyncChange.UPDATED


async def deactivate_dags(conn: AsyncConnection, dag_ids: Iterable[str]) -> list[str]:
    """Deactivate (never delete: runs and history keep pointing at them). Returns those that were active."""
    wanted = sorted(set(dag_ids))
    if not wanted:
        return []
    rows = await conn.execute(
        update(consumer_dags)
        .where(consumer_dags.c.dag_id.in_(wanted), consumer_dags.c.active)
        .values(active=False, updated_at=func.now())
        .returning(consumer_dags.c.dag_id)
    )
    return sorted(rows.scalars())


async def dags_under(conn: AsyncConnection, root: str) -> list[DagRow]:
    """DAGs whose defining file is `root` or lies under the folder `root`."""
    prefix = root.rstrip("/") + "/"
    rows = await conn.execute(
        select(consumer_dags).where((consumer_dags.c.fileloc == root)
                                | (func.left(consumer_dags.c.fileloc, len(prefix)) == prefix))
    )
    return [DagRow(*row) for row in rows]


async def list_dags(conn: AsyncConnection, *, active_only: bool = False) -> list[DagRow]:
    query = select(consumer_dags).order_by(consumer_dags.c.dag_id)
    if active_only:
        query = query.where(consumer_dags.c.active)
    return [DagRow(*row) for row in await conn.execute(query)]


async def get_dag(conn: AsyncConnection, dag_id: str) -> DagRow | None:
    row = (await conn.execute(select(consumer_dags).where(consumer_dags.c.dag_id == dag_id))).one_or_none()
    return DagRow(*row) if row is not None else None


async def dags_version(conn: AsyncConnection) -> tuple[int, datetime | None]:
    """Changes whenever a definition is created, changed, activated or deactivated (cheap to poll)."""
    row = (await conn.execute(select(func.count(), func.max(consumer_dags.c.updated_at)))).one()
    return int(row[0]), row[1]
