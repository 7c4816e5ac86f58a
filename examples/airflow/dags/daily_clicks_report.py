"""A roll-up consumer DAG: one Airflow run per UTC day, once all 24 hourly partitions of the day arrived.

Declared once, here: Airflow 3.3's `RollupMapper(StartOfDayMapper, DayWindow)` is the readiness rule (in
assetbus, `HourlyToDaily("UTC")`), and the tag `assetbus` says the assetbus bridge starts its runs. Airflow
gets the day as the run's `partition_key`. `count_clicks` produces the hours.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset, DayWindow, PartitionedAssetTimetable, RollupMapper, StartOfDayMapper, task

hourly_clicks = Asset("airflow_demo.hourly_clicks", uri="s3://example/clicks/hourly")

with DAG(
    dag_id="daily_clicks_report",
    schedule=PartitionedAssetTimetable(assets=hourly_clicks, partition_mapper_config={
        hourly_clicks: RollupMapper(upstream_mapper=StartOfDayMapper(timezone="UTC"), window=DayWindow()),
    }),
    catchup=False,
    description="one Airflow run per UTC day, once its 24 hours arrived",
    tags=["assetbus", "assetbus-example"],
):

    @task(inlets=[hourly_clicks])
    def report(**context: object) -> dict[str, object]:
        dag_run = context["dag_run"]
        hours = (dag_run.conf or {}).get("assetbus", {}).get("event_ids", [])  # type: ignore[attr-defined]
        print(f"daily report for {dag_run.partition_key} from {len(hours)} hourly partitions")  # type: ignore[attr-defined]
        return {"partition_key": dag_run.partition_key, "hours": len(hours)}  # type: ignore[attr-defined]

    report()
