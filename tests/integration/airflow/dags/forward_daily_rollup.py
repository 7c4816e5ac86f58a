"""A consumer DAG on Airflow's `PartitionedAssetTimetable` with its own roll-up mapper: 24 hourly partitions of
`forward.hourly` make one daily run."""

from typing import Any

from airflow.sdk import DAG, Asset, DayWindow, PartitionedAssetTimetable, RollupMapper, StartOfDayMapper, task

HOURLY = Asset("forward.hourly", uri="s3://forward/hourly")

with DAG("forward_daily_rollup", catchup=False, tags=["assetbus-test"],
         schedule=PartitionedAssetTimetable(assets=HOURLY, default_partition_mapper=RollupMapper(
             upstream_mapper=StartOfDayMapper(input_format="%Y-%m-%dT%H"), window=DayWindow()))):

    @task
    def report(**context: Any) -> str | None:
        key: str | None = context["dag_run"].partition_key
        return key

    report()
