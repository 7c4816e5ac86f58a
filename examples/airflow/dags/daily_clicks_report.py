"""A roll-up consumer DAG: one Airflow run per day, once all 24 hourly partitions of the day arrived.

The hourly → daily rule (UTC days) lives in assetbus (examples/airflow/consumers.py); Airflow gets
the day as the run's `partition_key`.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset, PartitionedAtRuntime, task

hourly_clicks = Asset("airflow_demo.hourly_clicks", uri="s3://example/clicks/hourly")

with DAG(dag_id="daily_clicks_report", schedule=PartitionedAtRuntime(), catchup=False,
         tags=["assetbus-example"]):

    @task(inlets=[hourly_clicks])
    def report(**context: object) -> dict[str, object]:
        dag_run = context["dag_run"]
        hours = (dag_run.conf or {}).get("assetbus", {}).get("event_ids", [])  # type: ignore[attr-defined]
        print(f"daily report for {dag_run.partition_key} from {len(hours)} hourly partitions")  # type: ignore[attr-defined]
        return {"partition_key": dag_run.partition_key, "hours": len(hours)}  # type: ignore[attr-defined]

    report()
