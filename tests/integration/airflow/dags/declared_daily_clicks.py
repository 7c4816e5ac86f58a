"""A consumer DAG declared once, in Airflow only: Airflow's own PartitionedAssetTimetable with a roll-up of
24 hourly partitions into one day. The tag `assetbus` makes the bridge start its runs (tests only)."""

from typing import Any

from airflow.sdk import DAG, Asset, DayWindow, PartitionedAssetTimetable, RollupMapper, StartOfDayMapper, task

declared_clicks = Asset("airflow_demo.declared_clicks", uri="s3://example/declared_clicks")

with DAG(dag_id="declared_daily_clicks", catchup=False, tags=["assetbus"],
         schedule=PartitionedAssetTimetable(assets=declared_clicks, partition_mapper_config={
             declared_clicks: RollupMapper(upstream_mapper=StartOfDayMapper(timezone="UTC"), window=DayWindow()),
         })):

    @task
    def report(dag_run: Any = None) -> dict[str, Any]:
        return {"partition_key": dag_run.partition_key, "events": len(dag_run.conf["assetbus"]["event_ids"])}

    report()
