"""Consumer runs executed by an orchestrator (an Airflow DAG run started by the bridge).

The bridge claims a run (status `running`, see `runs.claim_run`), creates the orchestrator's run
and records its id here; the outcome poller later reads the open ones and records the
orchestrator's final state as the run's outcome (`success` / `failed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.producers.readiness import RunStatus


@dataclass(frozen=True, slots=True)
class OpenExternalRun:
    run_id: str
    dag_id: str
    external_run_id: str
    external_state: str | None
    started_at: datetime | None


async def record_external_run(conn: AsyncConnection, run_id: str, external_run_id: str, external_state: str,
                              consumer: str) -> bool:
    """Note the orchestrator's run of a claimed run; it stays `running` until its outcome comes back."""
    rows = await conn.execute(text(
        "UPDATE consumer_runs SET external_run_id = :ext, external_state = :state, consumer = :consumer, "
        "detail = NULL WHERE run_id = :r AND status NOT IN ('success', 'failed') RETURNING id"),
        {"r": run_id, "ext": external_run_id, "state": external_state, "consumer": consumer})
    return rows.one_or_none() is not None


async def open_external_runs(conn: AsyncConnection, dag_ids: Sequence[str], limit: int = 5000) -> list[OpenExternalRun]:
    """Runs of these DAGs started in the orchestrator whose outcome has not come back yet, oldest first."""
    if not dag_ids:
        return []
    rows = await conn.execute(text(
        "SELECT run_id, dag_id, external_run_id, external_state, started_at FROM consumer_runs "
        "WHERE external_run_id IS NOT NULL AND status = 'running' AND dag_id = ANY(CAST(:dags AS text[])) "
        "ORDER BY dag_id, id LIMIT :limit"), {"dags": list(dag_ids), "limit": limit})
    return [OpenExternalRun(*row) for row in rows]


async def update_external_state(conn: AsyncConnection, run_id: str, external_state: str,
                                outcome: RunStatus | None = None, detail: str | None = None) -> bool:
    """Record the orchestrator's state; with `outcome` (success/failed) the run is finished."""
    if outcome is None:
        rows = await conn.execute(text(
            "UPDATE consumer_runs SET external_state = :state WHERE run_id = :r AND status = 'running' "
            "RETURNING id"), {"r": run_id, "state": external_state})
    else:
        rows = await conn.execute(text(
            "UPDATE consumer_runs SET external_state = :state, status = :status, detail = :detail, "
            "finished_at = now() WHERE run_id = :r AND status = 'running' RETURNING id"),
            {"r": run_id, "state": external_state, "status": outcome.value, "detail": detail})
    return rows.one_or_none() is not None


async def note_run_problem(conn: AsyncConnection, run_id: str, detail: str) -> None:
    """Why the orchestrator's run could not be created yet (shown by `assetbus runs list`)."""
    await conn.execute(text("UPDATE consumer_runs SET detail = :detail WHERE run_id = :r AND status = 'running'"),
                       {"r": run_id, "detail": detail[:2000]})
