"""A DAG of classic operators: `AssetbusEmitOperator` says that one partition of an export is ready.

The worker needs nothing but the Airflow connection `assetbus_default`: the operator's task asks the
API named there for its attempt's token and emits. Trigger it with `{"day": "2026-10-01"}`.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset

from assetbus.producers.airflow import AssetbusEmitOperator

exports = Asset("airflow_demo.order_exports", uri="s3://example/order_exports")

with DAG(dag_id="export_orders", schedule=None, catchup=False, tags=["assetbus-example"]):
    AssetbusEmitOperator(
        task_id="announce",
        asset=exports,
        partition_key="{{ dag_run.conf['day'] }}",
        partition_date="{{ dag_run.conf['day'] }}T00:00:00+00:00",
        extra={"path": "s3://example/order_exports/{{ dag_run.conf['day'] }}/", "run": "{{ run_id }}"},
        dedupe_key="export-{{ dag_run.conf['day'] }}",
    )
