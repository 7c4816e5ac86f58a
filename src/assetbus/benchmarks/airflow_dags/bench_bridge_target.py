"""Benchmark DAG (Airflow): started by the assetbus bridge, kept paused so only run creation is measured."""

from airflow.sdk import DAG, Asset, PartitionedAtRuntime, task

bench_orders = Asset("bench_airflow.orders", uri="bench://airflow/orders")

with DAG(dag_id="bench_bridge_target", schedule=PartitionedAtRuntime(), catchup=False, is_paused_upon_creation=True):

    @task(inlets=[bench_orders])  # type: ignore[untyped-decorator]
    def noop() -> None:
        print("noop")

    noop()
