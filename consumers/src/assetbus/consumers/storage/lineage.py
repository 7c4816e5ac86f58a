"""Where one stored event went: the consumer runs it triggered, and the DAG partitions where it still waits.

Both come from the partition queue (one row per consumer DAG and event; `run_id` set once a run
consumed it), looked up by event id through `ix_partition_queue_event_id` (migration 0005), and from
the runs that one event made ready on their own, which hold it without a queue row
(`consumer_runs.event_id`, through `uq_consumer_runs_event_id`, migration 0009).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.queue import loaded_key
from assetbus.consumers.storage.runs import RunRow, runs_by_run_id


@dataclass(frozen=True, slots=True)
class WaitingIn:
    """An event queued for a DAG's target partition whose run has not been created yet."""

    dag_id: str
    target_key: str | None


@dataclass(frozen=True, slots=True)
class EventLineage:
    runs: list[RunRow]
    """Runs that consumed the event, oldest first."""
    waiting: list[WaitingIn]
    """DAG partitions where it is queued and still waits for the rest of their condition."""


async def event_lineage(conn: AsyncConnection, event_id: int) -> EventLineage:
    """The runs an event triggered and where it still waits (both empty: no DAG waits on its asset)."""
    rows = list(await conn.execute(text("SELECT dag_id, target_key, run_id FROM partition_queue "
                                        "WHERE event_id = :event_id UNION ALL "
                                        "SELECT dag_id, partition_key, run_id FROM consumer_runs "
                                        "WHERE event_id = :event_id"), {"event_id": event_id}))
    runs = await runs_by_run_id(conn, [row.run_id for row in rows if row.run_id is not None])
    waiting = [WaitingIn(row.dag_id, loaded_key(row.target_key)) for row in rows if row.run_id is None]
    return EventLineage(runs, waiting)
