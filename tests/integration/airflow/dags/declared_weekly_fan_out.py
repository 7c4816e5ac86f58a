"""A DAG tagged `assetbus` whose mapper has no assetbus equivalent (a fan-out): it gets no readiness rule,
and `assetbus doctor` and `assetbus airflow sync` name it (tests only)."""

from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, StartOfWeekMapper, WeekWindow, task
from airflow.sdk.definitions.partition_mappers.temporal import FanOutMapper

weekly_plan = Asset("airflow_demo.weekly_plan", uri="s3://example/weekly_plan")

with DAG(dag_id="declared_weekly_fan_out", catchup=False, tags=["assetbus"],
         schedule=PartitionedAssetTimetable(assets=weekly_plan, partition_mapper_config={
             weekly_plan: FanOutMapper(upstream_mapper=StartOfWeekMapper(), window=WeekWindow()),
         })):

    @task
    def plan_day() -> None:
        print("planning")

    plan_day()
