"""Through Airflow's own `asset_state_store`, an asset's state is open only to tasks registered with the asset,
as on assetbus's API (docs/security.md, "Airflow's state store backend").

`asset_state_intruder` declares no asset, so `assetbus airflow sync` registers it with none. Its task builds
an accessor for `airflow_demo.checkpoints` (which `state_checkpoint.resume` declares) and reads, writes and
deletes through Airflow's execution API, which calls `AssetbusStoreBackend` in the api-server. The
backend acts as the calling task instance (named by the api-server's `StateCallerMiddleware`), and
assetbus refuses it: each call fails in the task with 403 `asset_not_registered`, and the value stays.
"""

from __future__ import annotations

import json
import uuid

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import task_token
from assetbus.producers.state import StateClient
from tests.integration.airflow.airflow_api import AirflowApi

DAG, TASK = "asset_state_intruder", "intrude"
CHECKPOINTS = "airflow_demo.checkpoints"


def test_a_task_not_registered_with_the_asset_can_neither_read_nor_write_its_state_through_airflow(
        airflow_api: AirflowApi, airflow_stack: AirflowStack) -> None:
    kept = f"kept-{uuid.uuid4().hex[:8]}"
    owner = task_token(airflow_stack.token_secret, "state_checkpoint", "owner-run", "resume")
    with StateClient(airflow_stack.api_url, owner) as client:  # the registered task writes it
        client.asset(CHECKPOINTS).state.set("watermark", kept)

    run_id = f"intrude-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger(DAG, run_id)
    run = airflow_api.wait_run(DAG, run_id, timeout_s=240)
    assert run["state"] == "success", airflow_api.task_instance(DAG, run_id, TASK)
    outcome = airflow_api.xcom(DAG, run_id, TASK)
    outcome = json.loads(outcome) if isinstance(outcome, str) else outcome

    assert set(outcome) == {"get", "set", "delete"}
    for call, answer in outcome.items():
        assert answer.startswith("refused:"), (call, answer)
        assert "403" in answer and "asset_not_registered" in answer, (call, answer)
        assert kept not in answer, (call, answer)  # the refusal does not leak the value
    with StateClient(airflow_stack.api_url, owner) as client:
        assert client.asset(CHECKPOINTS).state.get("watermark") == kept  # neither overwritten nor deleted
    printed = airflow_stack.cli("state", "get", "watermark", "--asset", CHECKPOINTS)
    assert printed.strip() == json.dumps(kept)
