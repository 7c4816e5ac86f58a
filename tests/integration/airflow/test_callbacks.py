"""Callbacks as Airflow users write them, in a real Airflow 3.3.2 (tests/integration/airflow/dags/callback_emits.py).

A plain `asset.emit()` and `emit(asset, context=context)` emit from task-level retry, failure and success
callbacks (run on the worker after the task, without a current context) and from DAG-level failure and
success callbacks (run by the dag-processor); a task-level notifier emits an asset its task lists only as an
inlet. Each event carries the provenance of the callback's attempt or DAG run.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow_stack import AirflowStack
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import events_of

DAG = "callback_emits"


async def _callback_events(engine: AsyncEngine, run_id: str, expected: set[str]) -> dict[str, dict[str, Any]]:
    async def found() -> dict[str, dict[str, Any]] | None:
        events = {e["partition_key"]: e for e in await events_of(engine, DAG, run_id)}
        return events if expected <= set(events) else None

    return await wait_for(found, timeout_s=120, interval=0.5, what=f"the callbacks' events {sorted(expected)}")


@pytest.fixture(scope="module")
def runs(airflow_api: AirflowApi) -> dict[str, str]:
    """One failing run and one succeeding run of the DAG, both finished."""
    ids = {"failed": f"cb-fail-{uuid.uuid4().hex[:8]}", "success": f"cb-ok-{uuid.uuid4().hex[:8]}"}
    airflow_api.trigger(DAG, ids["failed"], {"fail": True})
    airflow_api.trigger(DAG, ids["success"], {"fail": False})
    for outcome, run_id in ids.items():
        assert airflow_api.wait_run(DAG, run_id, timeout_s=300)["state"] == outcome
    return ids


async def test_task_level_retry_and_failure_callbacks_emit_as_their_attempt(
        runs: dict[str, str], stack_engine: AsyncEngine) -> None:
    events = await _callback_events(stack_engine, runs["failed"], {"task-retry-1", "task-failure-2", "dag-failure"})
    retry, failure = events["task-retry-1"], events["task-failure-2"]
    # a retry callback runs after Airflow gave the task instance the next try's id: Airflow's execution API
    # attests it no more, so it emits as its DAG run (docs/security.md, Identity modes)
    assert (retry["source_kind"], retry["task_id"], retry["try_number"], retry["extra"]["callback"]) == \
        ("dag", None, None, "task-retry")
    assert (failure["source_kind"], failure["task_id"], failure["try_number"], failure["extra"]["callback"]) == \
        ("task", "flaky", 2, "task-failure")
    assert "task-success-2" not in events


async def test_dag_level_callbacks_emit_as_the_dag_run_with_a_plain_asset_emit(
        runs: dict[str, str], stack_engine: AsyncEngine) -> None:
    failed = (await _callback_events(stack_engine, runs["failed"], {"dag-failure"}))["dag-failure"]
    succeeded = (await _callback_events(stack_engine, runs["success"], {"dag-success"}))["dag-success"]
    for event, name in ((failed, "dag-failure"), (succeeded, "dag-success")):
        assert (event["source_kind"], event["task_id"], event["map_index"], event["try_number"]) == \
            ("dag", None, None, None)
        assert event["extra"]["callback"] == name and event["asset"] == "airflow_test.callback_signals"


async def test_task_level_success_callbacks_emit_outlets_and_the_tasks_inlet(
        runs: dict[str, str], stack_engine: AsyncEngine) -> None:
    run_id = runs["success"]
    events = await _callback_events(stack_engine, run_id, {"task-retry-1", "task-success-2", "task-success-1"})
    assert (events["task-success-2"]["task_id"], events["task-success-2"]["try_number"]) == ("flaky", 2)
    assert events["task-success-1"]["task_id"] == "steady"

    async def inlet_event() -> list[dict[str, Any]]:
        return [e for e in await events_of(stack_engine, DAG, run_id) if e["asset"] == "airflow_test.callback_inlet"]

    inlet = await wait_for(inlet_event, timeout_s=120, interval=0.5, what="the inlet notifier's event")
    assert len(inlet) == 1
    assert (inlet[0]["source_kind"], inlet[0]["task_id"], inlet[0]["try_number"]) == ("task", "steady", 1)
    assert inlet[0]["extra"]["callback"] == "inlet-notifier" and inlet[0]["extra"]["run"]["run_id"] == run_id


def test_only_a_callback_token_of_the_task_may_publish_its_inlet(runs: dict[str, str], airflow_stack: AirflowStack,
                                                                  airflow_api: AirflowApi, credential_api: str) -> None:
    """In `credential` mode the `callback` flag is the worker's word (in `attested` mode, Airflow's state)."""
    ti = airflow_api.task_instance(DAG, runs["success"], "steady")
    request = {"dag_id": DAG, "run_id": runs["success"], "task_id": "steady", "try_number": ti["try_number"],
               "ti_id": ti["id"]}
    worker = {"Authorization": f"Bearer {airflow_stack.worker_credential}"}

    def publish(**more: Any) -> set[str]:
        response = httpx.post(f"{credential_api}/airflow/tokens", headers=worker, json={**request, **more})
        assert response.status_code == 200, response.text
        claims = jwt.decode(response.json()["token"], options={"verify_signature": False})
        return {asset["name"] for asset in claims["publish"]}

    assert publish() == {"airflow_test.callback_signals"}
    assert publish(callback=True) == {"airflow_test.callback_signals", "airflow_test.callback_inlet"}
    refused = httpx.post(f"{credential_api}/airflow/tokens", headers=worker,
                         json={"kind": "dag", "dag_id": DAG, "run_id": runs["success"], "callback": True})
    assert refused.status_code == 422
