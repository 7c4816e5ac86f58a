"""What each waiting partition of a consumer DAG still waits for, e.g. `2026-10-02: demo.orders 2/24 hours`.

The storage layer finds the target partitions with pending queue entries; the DAG's own condition
(the scheduler's pure planner) says how far each asset wait is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.scheduler.apply import pending
from assetbus.consumers.scheduler.conditions import Progress
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.planner import progress
from assetbus.consumers.storage.dags import get_dag
from assetbus.consumers.storage.queue import pending_entries, waiting_targets


@dataclass(frozen=True, slots=True)
class WaitingPartition:
    """A DAG's target partition with queued events and no run yet."""

    dag_id: str
    target_key: str | None
    target_date: datetime | None
    queued_event_ids: list[int]
    """The upstream events queued for it, in arrival order."""
    progress: list[Progress] = field(default_factory=list)
    """Each asset wait: `have` of `need` (empty when the DAG's definition cannot be read)."""


async def waiting_partitions(conn: AsyncConnection, dag_id: str, *, after_key: str | None = None,
                             limit: int = 50) -> list[WaitingPartition]:
    """A page of the DAG's waiting partitions (keys ascending; pass the last key as `after_key`)."""
    keys = await waiting_targets(conn, dag_id, after_key=after_key, limit=limit)
    if not keys:
        return []
    row = await get_dag(conn, dag_id)
    dag: ConsumerDag | None = None
    if row is not None:
        try:
            dag = ConsumerDag.from_definition(row.definition)
        except ValidationError:
            dag = None
    entries = await pending_entries(conn, [(dag_id, key) for key in keys])
    found = []
    for key in keys:
        queued = entries.get((dag_id, key), [])
        date = next((q.target_date for q in queued if q.target_date is not None), None)
        waits = progress(dag, key, [pending(q) for q in queued]) if dag is not None else []
        found.append(WaitingPartition(dag_id, key, date, [q.event_id for q in queued], waits))
    return found
