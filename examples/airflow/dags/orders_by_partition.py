"""A consumer DAG started by assetbus: one Airflow run per ready partition of `airflow_demo.orders`.

Declared once, here. Its schedule is Airflow 3.3's own `PartitionedAssetTimetable` (the default partition
mapper is the identity: one run per partition of `orders`), and the tag `assetbus` says the assetbus bridge
starts its runs: the bridge reads the readiness rule from this timetable. The run's `partition_key` is the
partition; `conf["assetbus"]` carries the assetbus run id and the triggering events.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, task

orders = Asset("airflow_demo.orders", uri="s3://example/orders")

with DAG(dag_id="orders_by_partition", schedule=PartitionedAssetTimetable(assets=orders), catchup=False,
         description="one Airflow run per ready orders partition", tags=["assetbus", "assetbus-example"]):

    @task(inlets=[orders])
    def load_partition(**context: object) -> dict[str, object]:
        dag_run = context["dag_run"]
        triggered = (dag_run.conf or {}).get("assetbus", {})  # type: ignore[attr-defined]
        print(f"loading partition {dag_run.partition_key}, events {triggered.get('event_ids')}")  # type: ignore[attr-defined]
        return {"partition_key": dag_run.partition_key, "event_ids": triggered.get("event_ids")}  # type: ignore[attr-defined]

    load_partition()
