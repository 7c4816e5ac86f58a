"""A broken DAG file (tests only): it emits at the top level, so while the dag-processor parses it.

assetbus refuses that emission with a clear error, which Airflow shows as this file's import error.
"""

from airflow.sdk import DAG, Asset

from assetbus.producers.airflow import emit

orders = Asset("airflow_demo.orders", uri="s3://example/orders")
emit(orders, extra={"parsed": True})

with DAG(dag_id="emits_while_parsed", schedule=None):
    pass
