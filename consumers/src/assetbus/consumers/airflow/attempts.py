"""Is this Airflow task attempt (or DAG run) really running, or ended within `CALLBACK_WINDOW_S` (for its
callbacks)? Asked of Airflow before a token is minted (docs/airflow.md, "The trust boundary").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote
from uuid import UUID

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.dagruns import FINAL_STATES, runs_path
from assetbus.consumers.airflow.errors import AirflowError, AirflowNotFound

CALLBACK_WINDOW_S = 600.0
"""How long after its end an attempt or DAG run may still get a token (for its callbacks)."""

FINISHED_TI = {"success", "failed", "up_for_retry", "up_for_reschedule", "skipped"}
_RETRIED = {"up_for_retry", "failed"}
"""How Airflow's history records a try that was retried (3.3.2 records it as `failed`)."""


class AttemptRefused(AirflowError):
    """Airflow does not vouch for the attempt or run named in a token request; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, status=403, retriable=False)
        self.reason = reason


def _recent(end: str | None) -> bool:
    if not end:
        return False
    ended = datetime.fromisoformat(end.replace("Z", "+00:00"))
    return datetime.now(UTC) - ended <= timedelta(seconds=CALLBACK_WINDOW_S)


async def check_task_attempt(airflow: AirflowClient, *, ti_id: UUID, dag_id: str, run_id: str, task_id: str,
                             map_index: int, try_number: int, callback: bool = False) -> None:
    """Return if Airflow vouches for the attempt; raise AttemptRefused (or AirflowUnavailable) otherwise.

    A retry callback (`callback`) runs after Airflow gave the task instance a new UUID for its next
    try, and Airflow's REST API shows no try's old UUID: its attempt is vouched for by the try itself,
    in Airflow's history of the task instance, ended (`up_for_retry`, or `failed` as 3.3.2 records it)
    within the window."""
    path = f"{runs_path(dag_id, run_id)}/taskInstances/{quote(task_id, safe='')}"
    if map_index >= 0:
        path += f"/{map_index}"
    try:
        ti: dict[str, Any] = await airflow.get(path)
    except AirflowNotFound as error:
        raise AttemptRefused(f"Airflow has no task instance {dag_id}/{run_id}/{task_id}[{map_index}]") from error
    if str(ti.get("id")) != str(ti_id):
        if callback and await _retried_recently(airflow, path, try_number):
            return
        raise AttemptRefused("the task instance id does not match Airflow's")
    if ti.get("try_number") != try_number:
        raise AttemptRefused(f"Airflow's task instance is at try {ti.get('try_number')}, not {try_number}")
    state = ti.get("state")
    if state == "running" or (state in FINISHED_TI and _recent(ti.get("end_date"))):
        return
    raise AttemptRefused(f"the task instance is {state}, not running")


async def _retried_recently(airflow: AirflowClient, path: str, try_number: int) -> bool:
    try:
        past: dict[str, Any] = await airflow.get(f"{path}/tries/{try_number}")
    except AirflowNotFound:
        return False
    return past.get("state") in _RETRIED and _recent(past.get("end_date"))


async def check_dag_run(airflow: AirflowClient, *, dag_id: str, run_id: str) -> None:
    """Return if the DAG run exists and is running or just finished; raise AttemptRefused otherwise."""
    try:
        run: dict[str, Any] = await airflow.get(runs_path(dag_id, run_id))
    except AirflowNotFound as error:
        raise AttemptRefused(f"Airflow has no DAG run {dag_id}/{run_id}") from error
    state = run.get("state")
    if state == "running" or (state in FINAL_STATES and _recent(run.get("end_date"))):
        return
    raise AttemptRefused(f"the DAG run is {state} and ended more than {CALLBACK_WINDOW_S:.0f}s ago")
