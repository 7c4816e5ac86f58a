"""Benchmark DAGs (Airflow), one per measured path. Each one's only task is an `EmptyOperator` without inlets or
outlets, which Airflow's scheduler marks successful without an executor: a run costs Airflow its scheduling, on
every path alike, and no task process.

- `bench_bridge_target`: its runs are created by the assetbus bridge, one per ready partition.
- `bench_forwarded_consumer`: Airflow-native scheduling (`schedule=[asset]`, no assetbus code in the DAG) of
  events emitted through assetbus, which the assetbus forwarder posts to Airflow as asset events.
- `bench_native_consumer`: Airflow's own path, scheduled on an asset whose events the benchmark itself POSTs
  to Airflow's REST API (`POST /api/v2/assets/events`).
- `bench_native_partitions`: Airflow-native partitioned scheduling (`PartitionedAssetTimetable`, identity
  mapper: one run per partition key) of partition-keyed events emitted through assetbus and forwarded.
"""

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
