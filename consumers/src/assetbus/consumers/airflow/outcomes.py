"""Airflow's outcome of each bridged run comes back to assetbus: `assetbus runs list` shows it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.dagruns import FINAL_STATES, run_state
from assetbus.consumers.airflow.errors import AirflowError, AirflowNotFound
from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.storage import translated
from assetbus.consumers.storage.external_runs import OpenExternalRun, open_external_runs, update_external_state
from assetbus.consumers.storage.runs import RunStatus

log = logging.getLogger("assetbus.airflow.outcomes")

CONCURRENCY = 8
"""Airflow API calls in flight at once while polling."""


class OutcomePoller:
    """Every `interval_s`, reads Airflow's state of each open bridged run and records it. start()/stop()."""

    def __init__(self, airflow: AirflowClient, engine: AsyncEngine, dag_ids: Sequence[str], *,
                 interval_s: float = 2.0) -> None:
        self._airflow = airflow
        self._engine = engine
        self._dag_ids = list(dag_ids)
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self.finished = 0

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="assetbus-airflow-outcomes")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_forever(self) -> None:
        assert self._task is not None, "call start() first"
        await self._task

    async def _loop(self) -> None:
        while True:
            try:
                await self.poll_once()
            except (AirflowError, StorageUnavailable) as error:
                log.warning("cannot read run outcomes now, trying again in %.1fs: %s", self.interval_s, error)
            await asyncio.sleep(self.interval_s)

    async def poll_once(self) -> int:
        """One pass over the open runs; returns how many finished."""
        async with translated(), self._engine.connect() as conn:
            open_runs = await open_external_runs(conn, self._dag_ids)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(run: OpenExternalRun) -> bool:
            async with gate:
                return await self._refresh(run)

        done = sum(await asyncio.gather(*(one(run) for run in open_runs)))
        self.finished += done
        return done

    async def _refresh(self, run: OpenExternalRun) -> bool:
        outcome: RunStatus | None
        detail: str | None
        try:
            state = await run_state(self._airflow, run.dag_id, run.external_run_id)
        except AirflowNotFound:
            state, outcome, detail = "deleted", RunStatus.FAILED, "the Airflow run was deleted"
        else:
            outcome = FINAL_STATES.get(state)
            detail = f"Airflow run {run.external_run_id}: {state}" if outcome else None
        if outcome is None and state == run.external_state:
            return False
        async with translated(), self._engine.begin() as conn:
            await update_external_state(conn, run.run_id, state, outcome, detail)
        return outcome is not None
