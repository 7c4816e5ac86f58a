"""A provider DAG (tests only): its worker has only Airflow connections, no ASSETBUS_* or KAFKA_* variables.

`environment` returns the names of any such variables the worker sees (the test expects none). `announce`
emits through the connection conf["conn_id"], whose extras name the topic prefix and a Kafka connection
by reference (`kafka_conn_id`, a kafka_default-style config dict).
"""

from __future__ import annotations

import os

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import AssetbusEmitOperator

by_reference = Asset("airflow_test.by_reference", uri="s3://example/by_reference")

with DAG(dag_id="export_by_reference", schedule=None, catchup=False):

    @task
    def environment() -> list[str]:
        return sorted(name for name in os.environ if name.startswith(("ASSETBUS_", "KAFKA_")))

    environment() >> AssetbusEmitOperator(
        task_id="announce",
        asset=by_reference,
        assetbus_conn_id="assetbus_by_reference",
        partition_key="{{ dag_run.conf['partition'] }}",
        extra={"run": "{{ run_id }}"},
        dedupe_key="{{ dag_run.conf['partition'] }}",
    )
