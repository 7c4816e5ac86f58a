"""A task on a worker whose Airflow sets `[workers] state_store_backend` emits (tests only).

The task process reads Airflow's configuration from its environment: the task sets
AIRFLOW__WORKERS__STATE_STORE_BACKEND to conf["worker_backend"] before it emits, as a worker configured so
would have it. It returns the refusal's code and message (or the receipt's status, if it emitted). Its
sibling `control` emits the same way without the setting.
"""

from __future__ import annotations

import os
from typing import Any

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import TokenRequestFailed, emit

bypassed = Asset("airflow_test.bypassed", uri="s3://example/bypassed")

with DAG(dag_id="attested_bypass", schedule=None, catchup=False, tags=["assetbus-test"]):

    @task(outlets=[bypassed])
    def bypass(**context: Any) -> dict[str, str]:
        os.environ["AIRFLOW__WORKERS__STATE_STORE_BACKEND"] = context["dag_run"].conf["worker_backend"]
        try:
            receipt = emit(bypassed, partition_key="bypassed")
        except TokenRequestFailed as error:
            return {"code": str(error.code), "message": str(error)}
        return {"code": "emitted", "message": receipt.status.value}

    @task(outlets=[bypassed])
    def control() -> str:
        """The same emit on a worker configured as usual: attested."""
        return emit(bypassed, partition_key="control").status.value

    bypass()
    control()
