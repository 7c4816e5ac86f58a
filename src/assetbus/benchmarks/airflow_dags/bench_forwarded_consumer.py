"""Benchmark DAG (Airflow): Airflow-native scheduling of events emitted through assetbus, which the assetbus
forwarder posts to Airflow as asset events (`schedule=[asset]`, no assetbus code in the DAG)."""

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

bench_forwarded = Asset("bench_airflow.forwarded", uri="bench://airflow/forwarded")

with DAG(dag_id="bench_forwarded_consumer", schedule=[bench_forwarded], catchup=False):
    EmptyOperator(task_id="noop")
