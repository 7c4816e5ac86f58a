"""A real Airflow producer DAG emits mid-run through assetbus (examples/airflow/dags/ingest_orders.py)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow_stack import AirflowStack
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import events_of

DAG = "ingest_orders"


@pytest.fixture(scope="module")
def failed_run(airflow_api: AirflowApi) -> str:
    """One run of the producer DAG: try 1 emits batches 0-2 and fails, the retry re-emits batch 2,
    emits batch 3 and fails again, so the DAG run fails."""
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger(DAG, run_id, {"batches": 3, "fail": True})
    run = airflow_api.wait_run(DAG, run_id, timeout_s=240)
    assert run["state"] == "failed"
    return run_id


async def test_events_emitted_before_the_failure_stay_with_airflow_provenance(
        failed_run: str, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    assert airflow_api.task_instance(DAG, failed_run, "ingest")["state"] == "failed"
    orders = [e for e in await events_of(stack_engine, DAG, failed_run) if e["asset"] == "airflow_demo.orders"]
    assert [(e["partition_key"], e["try_number"]) for e in orders] == [
        ("batch-0", 1), ("batch-1", 1), ("batch-2", 1), ("batch-3", 2)]
    for event in orders:
        assert (event["source_kind"], event["dag_id"], event["run_id"], event["task_id"], event["map_index"]) == \
            ("task", DAG, failed_run, "ingest", -1)
        assert event["extra"]["rows"] == 1000


async def test_the_retry_re_emitting_a_batch_gets_duplicate(failed_run: str, airflow_api: AirflowApi,
                                                           stack_engine: AsyncEngine) -> None:
    assert airflow_api.xcom(DAG, failed_run, "ingest", "batch-2-try-2") == "duplicate"
    assert airflow_api.xcom(DAG, failed_run, "ingest", "batch-3-try-2") == "accepted"
    batch_2 = [e for e in await events_of(stack_engine, DAG, failed_run) if e["dedupe_key"] == "batch-2"]
    assert len(batch_2) == 1 and batch_2[0]["try_number"] == 1


async def test_dag_level_failure_callback_emits_with_null_task_fields(failed_run: str,
                                                                      stack_engine: AsyncEngine) -> None:
    async def incident() -> list[dict[str, Any]]:
        events = await events_of(stack_engine, DAG, failed_run)
        return [e for e in events if e["asset"] == "airflow_demo.incidents"]

    found = await wait_for(incident, timeout_s=120, interval=0.5, what="the DAG-level callback's incident")
    assert len(found) == 1
    event = found[0]
    assert (event["source_kind"], event["task_id"], event["map_index"], event["try_number"]) == \
        ("dag", None, None, None)
    assert event["extra"]["team"] == "ingest" and event["extra"]["run"]["run_id"] == failed_run


def test_emitting_while_a_dag_file_is_parsed_is_refused(airflow_api: AirflowApi) -> None:
    errors = airflow_api.get("/importErrors", limit=100)["import_errors"]
    mine = [e for e in errors if e["filename"].endswith("emits_while_parsed.py")]
    assert len(mine) == 1, errors
    assert "asset.emit() needs a running Airflow task or callback" in mine[0]["stack_trace"]


def test_token_endpoint_refuses_an_attempt_airflow_does_not_vouch_for_even_to_a_worker(
        airflow_stack: AirflowStack, failed_run: str, credential_api: str) -> None:
    url = f"{airflow_stack.api_url}/airflow/tokens"
    worker = {"Authorization": f"Bearer {airflow_stack.worker_credential}"}  # what every worker holds
    task = {"dag_id": DAG, "run_id": failed_run, "task_id": "ingest", "try_number": 2, "ti_id": str(uuid.uuid4())}
    attested = httpx.post(url, headers=worker, json=task)  # attested mode: no task token for a credential
    assert attested.status_code == 403 and attested.json()["code"] == "attestation_required"
    forged = httpx.post(f"{credential_api}/airflow/tokens", headers=worker, json=task)  # credential mode
    assert forged.status_code == 403 and forged.json()["code"] == "attempt_not_running"
    assert "does not match" in forged.json()["message"]
    unknown = httpx.post(url, headers=worker, json={"kind": "dag", "dag_id": DAG, "run_id": "no-such-run"})
    assert unknown.status_code == 403 and unknown.json()["code"] == "attempt_not_running"
    malformed = httpx.post(url, headers=worker, json={"dag_id": DAG, "run_id": failed_run, "task_id": "ingest"})
    assert malformed.status_code == 422 and malformed.json()["code"] == "invalid_request"
