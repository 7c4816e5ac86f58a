"""Benchmark DAG (Airflow): Airflow's own path, a DAG scheduled on an asset whose events are POSTed to
Airflow's REST API (`POST /api/v2/assets/events`) by the benchmark itself."""

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

bench_native = Asset("bench_airflow.native", uri="bench://airflow/native")

with DAG(dag_id="bench_native_consumer", schedule=[bench_native], catchup=False):
    EmptyOperator(task_id="noop")
