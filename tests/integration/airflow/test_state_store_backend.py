"""Airflow keeps task and asset state in assetbus (`[state_store] backend = AssetbusStoreBackend`).

A real Airflow task checkpoints through the Task SDK's `task_state_store` and fails; its retry reads the
checkpoint back and succeeds. The value is in assetbus: readable with the task's assetbus token through
the execution API as JSON, and with `assetbus state get`.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage.state import TaskKey, get_task_state
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import task_token
from assetbus.producers.state import StateClient
from tests.integration.airflow.airflow_api import AirflowApi

DAG, TASK = "state_checkpoint", "resume"
CHECKPOINT = {"batch": 41, "written_by_try": 1}


@pytest.fixture(scope="module")
def resumed_run(airflow_api: AirflowApi) -> str:
    run_id = f"s-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger(DAG, run_id)
    run = airflow_api.wait_run(DAG, run_id, timeout_s=240)
    assert run["state"] == "success", airflow_api.task_instance(DAG, run_id, TASK)
    return run_id


def test_the_retry_reads_back_what_the_failed_try_wrote(resumed_run: str, airflow_api: AirflowApi) -> None:
    assert airflow_api.task_instance(DAG, resumed_run, TASK)["try_number"] == 2
    returned = json.loads(airflow_api.xcom(DAG, resumed_run, TASK))
    assert returned == {"resumed_from": CHECKPOINT, "watermark": "batch-41", "try_number": 2}


def test_the_checkpoint_is_kept_in_assetbus(resumed_run: str, airflow_stack: AirflowStack) -> None:
    token = task_token(airflow_stack.token_secret, DAG, resumed_run, TASK, try_number=2)
    with StateClient(airflow_stack.api_url, token) as client:
        assert client.task_state.get("checkpoint") == CHECKPOINT
    printed = airflow_stack.cli("state", "get", "checkpoint", "--dag", DAG, "--run", resumed_run, "--task", TASK)
    assert json.loads(printed) == CHECKPOINT
    assert airflow_stack.cli("state", "get", "watermark", "--asset", "airflow_demo.checkpoints").strip() \
        == json.dumps("batch-41")


async def test_airflows_default_retention_reaches_assetbus_as_expires_at(resumed_run: str,
                                                                         stack_engine: AsyncEngine) -> None:
    async with stack_engine.connect() as conn:
        entry = await get_task_state(conn, TaskKey(DAG, resumed_run, TASK, -1), "checkpoint")
    assert entry is not None and entry.expires_at is not None
    # [state_store] default_retention_days is 30: the worker set expires_at = now + 30 days
    assert abs(entry.expires_at - (datetime.now(UTC) + timedelta(days=30))) < timedelta(hours=1)
