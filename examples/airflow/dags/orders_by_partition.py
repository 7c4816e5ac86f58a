"""A consumer DAG started by assetbus: one Airflow run per ready partition of `airflow_demo.orders`.

`schedule=PartitionedAtRuntime()` lets Airflow accept the run's `partition_key` from the REST API
(the bridge sets it); `conf["assetbus"]` carries the assetbus run id and the triggering event ids.
Its readiness rule lives in assetbus (examples/airflow/consumers.py).
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset, PartitionedAtRuntime, task

orders = Asset("airflow_demo.orders", uri="s3://example/orders")

with DAG(dag_id="orders_by_partition", schedule=PartitionedAtRuntime(), catchup=False,
         tags=["assetbus-example"]):

    @task(inlets=[orders])
    def load_partition(**context: object) -> dict[str, object]:
        dag_run = context["dag_run"]
        triggered = (dag_run.conf or {}).get("assetbus", {})  # type: ignore[attr-defined]
        print(f"loading partition {dag_run.partition_key}, events {triggered.get('event_ids')}")  # type: ignore[attr-defined]
        return {"partition_key": dag_run.partition_key, "event_ids": triggered.get("event_ids")}  # type: ignore[attr-defined]

    load_partition()
