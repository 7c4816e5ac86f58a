"""A task registered with no asset reaches for `airflow_demo.checkpoints`' state through Airflow's own
`asset_state_store` (an accessor it builds itself: Airflow's context offers only a task's inlets and
outlets). It records what each call answered; the test reads that back from XCom."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk import DAG, task
from airflow.sdk.execution_time.context import AssetStateStoreAccessor

CHECKPOINTS = "airflow_demo.checkpoints"

with DAG(dag_id="asset_state_intruder", schedule=None, catchup=False, tags=["assetbus-test"]):

    @task
    def intrude() -> dict[str, str]:
        accessor = AssetStateStoreAccessor(name=CHECKPOINTS)
        calls: dict[str, Callable[[], Any]] = {
            "get": lambda: accessor.get("watermark"),
            "set": lambda: accessor.set("watermark", "forged"),
            "delete": lambda: accessor.delete("watermark"),
        }
        outcome: dict[str, str] = {}
        for name, call in calls.items():
            try:
                outcome[name] = f"allowed: {call()!r}"
            except Exception as error:  # what Airflow hands the task: the refusal, with assetbus's reason
                outcome[name] = f"refused: {error!r}"
        return outcome

    intrude()
