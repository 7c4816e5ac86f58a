"""Airflow's outcome of each bridged run comes back to assetbus: `assetbus runs list` shows it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.dagruns import FINAL_STATES, RUN_ID_PREFIX, runs_path
from assetbus.consumers.storage import translated
from assetbus.consumers.storage.runs import OpenExternalRun, open_external_runs, update_external_state


class OutcomePoller:
    """Reads Airflow's state of each open bridged run and records it (`poll_once`, which the bridge runs
    periodically)."""

    def __init__(self, airflow: AirflowClient, engine: AsyncEngine, dag_ids: Sequence[str], outcomes: Counter) -> None:
        """`outcomes` counts the runs that reached a final state, by `dag_id` and `state`."""
        self._airflow = airflow
        self._engine = engine
        self._dag_ids = list(dag_ids)
        self._outcomes = outcomes

    def watch(self, dag_id: str) -> None:
        """Also read the outcomes of this DAG's runs (a DAG the bridge found after it started)."""
        if dag_id not in self._dag_ids:
            self._dag_ids.append(dag_id)

    async def poll_once(self) -> None:
        """One pass over the open runs: per DAG, one paged list of the runs ended since the oldest open run
        started and one of the running ones, so the cost follows the number of DAGs, not of open runs."""
        async with translated(), self._engine.connect() as conn:
            open_runs = await open_external_runs(conn, self._dag_ids)
        by_dag: dict[str, list[OpenExternalRun]] = {}
        for run in open_runs:
            by_dag.setdefault(run.dag_id, []).append(run)
        for dag_id, runs in by_dag.items():
            states = await self._states(dag_id, runs)
            for run in runs:
                state = states.get(run.external_run_id)
                if state is None or state == run.external_state:
                    continue
                outcome = FINAL_STATES.get(state)
                detail = f"Airflow run {run.external_run_id}: {state}" if outcome else None
                async with translated(), self._engine.begin() as conn:
                    await update_external_state(conn, run.run_id, state, outcome, detail)
                if outcome is not None:
                    self._outcomes.labels(dag_id=dag_id, state=state).inc()

    async def _states(self, dag_id: str, runs: list[OpenExternalRun]) -> dict[str, str]:
        """Airflow's state of the bridged runs of one DAG that are running or have ended."""
        starts = [run.started_at for run in runs if run.started_at is not None]
        since = (min(starts) if starts else datetime.now(UTC)) - timedelta(minutes=5)
        found: dict[str, str] = {}
        for params in ({"state": ["success", "failed"], "end_date_gte": since.isoformat()}, {"state": ["running"]}):
            for item in await self._airflow.pages(runs_path(dag_id), "dag_runs", params=params):
                run_id = str(item.get("dag_run_id", ""))
                if run_id.startswith(RUN_ID_PREFIX):
                    found[run_id] = str(item.get("state"))
        return found
