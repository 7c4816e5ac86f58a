"""What each waiting partition of a consumer DAG still waits for, e.g. `2026-10-02: demo.orders 2/24 hours`, as
the DAG's own condition (the scheduler's pure planner) measures its pending queue entries.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.api.ui.models import WaitingOut, WaitOut
from assetbus.consumers.scheduler.apply import pending
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.planner import progress
from assetbus.consumers.storage.dags import get_dag
from assetbus.consumers.storage.queue import pending_entries, waiting_targets


async def waiting_partitions(conn: AsyncConnection, dag_id: str, *, after_key: str | None = None,
                             limit: int = 50) -> list[WaitingOut]:
    """A page of the DAG's waiting partitions: its target partitions with queued events and no run yet (keys
    ascending; pass the last key as `after_key`)."""
    keys = await waiting_targets(conn, dag_id, after_key=after_key, limit=limit)
    if not keys:
        return []
    row = await get_dag(conn, dag_id)
    dag = ConsumerDag.readable(row.definition) if row is not None else None
    entries = await pending_entries(conn, [(dag_id, key) for key in keys])
    found = []
    for key in keys:
        queued = entries.get((dag_id, key), [])
        date = next((q.target_date for q in queued if q.target_date is not None), None)
        waits = progress(dag, key, [pending(q) for q in queued]) if dag is not None else []
        found.append(WaitingOut(dag_id=dag_id, target_key=key, target_date=date,
                                queued_event_ids=[q.event_id for q in queued],
                                waits=[WaitOut.model_validate(p, from_attributes=True) for p in waits]))
    return found
