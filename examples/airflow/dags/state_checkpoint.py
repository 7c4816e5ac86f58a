"""A task that checkpoints through Airflow's own state store (kept in assetbus by AssetbusStoreBackend).

Try 1 writes its checkpoint (task state) and a watermark (asset state), then fails; the retry reads
both back and returns them (as a JSON string, its XCom).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Asset, task

checkpoints = Asset("airflow_demo.checkpoints", uri="s3://example/checkpoints")

with DAG(dag_id="state_checkpoint", schedule=None, catchup=False, tags=["assetbus-example"]):

    @task(retries=1, retry_delay=timedelta(seconds=1), inlets=[checkpoints])
    def resume(task_state_store: Any = None, asset_state_store: Any = None, ti: Any = None) -> str:
        found = task_state_store.get("checkpoint")
        if ti.try_number == 1:
            if found is not None:
                raise RuntimeError(f"try 1 found a checkpoint it did not write: {found!r}")
            task_state_store.set("checkpoint", {"batch": 41, "written_by_try": 1})
            asset_state_store[checkpoints].set("watermark", "batch-41")
            raise RuntimeError("fails after writing its checkpoint: the retry resumes from it")
        return json.dumps({"resumed_from": found, "watermark": asset_state_store[checkpoints].get("watermark"),
                           "try_number": ti.try_number})

    resume()
