"""A producer DAG: its task emits one event per committed batch while it runs.

Try 1 emits batches 0, 1 and 2, then fails on purpose. Try 2 (the retry) re-emits batch 2 with the
same dedupe key, gets a `duplicate` receipt naming the original event, emits batch 3, and fails
again, so the DAG run fails and its DAG-level `on_failure_callback` (AssetbusNotifier) emits an
incident whose task fields are null. Trigger it with `{"batches": 3, "fail": true}` (the defaults).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import AssetbusNotifier, emit

orders = Asset("airflow_demo.orders", uri="s3://example/orders")
incidents = Asset("airflow_demo.incidents", uri="assetbus://airflow_demo/incidents")

with DAG(
    dag_id="ingest_orders",
    schedule=None,
    catchup=False,
    on_failure_callback=AssetbusNotifier(incidents, extra={"team": "ingest", "action": "investigate"}),
    tags=["assetbus-example"],
):

    # `incidents` is listed as an inlet only so that Airflow knows it and `assetbus airflow sync`
    # registers it (inlets have no side effects); the DAG-level notifier emits it.
    @task(outlets=[orders], inlets=[incidents], retries=1, retry_delay=timedelta(seconds=1))
    def ingest(**context: object) -> None:
        ti = context["ti"]
        conf = context["dag_run"].conf or {}  # type: ignore[attr-defined]
        batches = int(conf.get("batches", 3))
        first = 0 if ti.try_number == 1 else batches - 1  # type: ignore[attr-defined]  # a retry resumes
        for batch in range(first, batches + ti.try_number - 1):  # type: ignore[attr-defined]
            receipt = emit(orders, extra={"batch": batch, "rows": 1000}, partition_key=f"batch-{batch}",
                           dedupe_key=f"batch-{batch}")
            print(f"batch {batch}: {receipt.status} event {receipt.id} at {receipt.timestamp}")
            ti.xcom_push(key=f"batch-{batch}-try-{ti.try_number}", value=receipt.status.value)  # type: ignore[attr-defined]
        if conf.get("fail", True):
            raise RuntimeError(f"failing on purpose after try {ti.try_number}")  # type: ignore[attr-defined]

    ingest()
