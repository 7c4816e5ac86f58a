"""Benchmark DAG (Airflow): Airflow's own path, a DAG scheduled on an asset whose events are POSTed to
Airflow's REST API."""

from airflow.sdk import DAG, Asset, task

bench_native = Asset("bench_airflow.native", uri="bench://airflow/native")

with DAG(dag_id="bench_native_consumer", schedule=[bench_native], catchup=False):

    @task  # type: ignore[untyped-decorator]
    def noop() -> None:
        print("noop")

    noop()
