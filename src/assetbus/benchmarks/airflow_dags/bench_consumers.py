"""Benchmark DAGs (Airflow), one per measured path (docs/benchmarks.md, "Airflow"; the assets of
`assetbus.benchmarks.airflow` say how each one's runs come). Each one's only task is an `EmptyOperator`, which
Airflow's scheduler marks successful without an executor: every path costs Airflow the same scheduling."""

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, PartitionedAtRuntime

SCHEDULES = {
    "bench_bridge_target": PartitionedAtRuntime(),
    "bench_forwarded_consumer": [Asset("bench_airflow.forwarded", uri="bench://airflow/forwarded")],
    "bench_native_consumer": [Asset("bench_airflow.native", uri="bench://airflow/native")],
    "bench_native_partitions": PartitionedAssetTimetable(
        assets=Asset("bench_airflow.partitions", uri="bench://airflow/partitions")),
}

for dag_id, schedule in SCHEDULES.items():
    with DAG(dag_id=dag_id, schedule=schedule, catchup=False):
        EmptyOperator(task_id="noop")
