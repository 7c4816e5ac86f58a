"""Benchmark DAG (Airflow): Airflow-native partitioned scheduling (`PartitionedAssetTimetable`, identity
mapper: one run per partition key) of partition-keyed events emitted through assetbus and forwarded."""

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, PartitionedAssetTimetable

bench_partitions = Asset("bench_airflow.partitions", uri="bench://airflow/partitions")

with DAG(dag_id="bench_native_partitions", schedule=PartitionedAssetTimetable(assets=bench_partitions),
         catchup=False):
    EmptyOperator(task_id="noop")
