"""`dag.test()` of a DAG that emits, offline: no assetbus API, no Kafka, no worker credential.

`offline()` puts the SDK's test double (InMemoryEmitter) where the API and Kafka would be, so the same
DAG code emits into it, each task as its own attempt, and gets the persister's answers. Run it with
pytest, or as `python examples/airflow/test_offline.py`, where Airflow 3.3 and its metadata DB are
(`airflow db migrate`); tests/integration/airflow/test_provider_offline.py runs it.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import AssetbusEmitOperator, AssetbusNotifier, emit
from assetbus.producers.airflow.testing import offline

orders = Asset("airflow_demo.orders", uri="s3://example/orders")

with DAG(dag_id="emit_offline", schedule=None, catchup=False) as dag:

    @task(outlets=[orders], on_success_callback=AssetbusNotifier(orders, extra={"loaded": True}))
    def load() -> None:
        for batch in (0, 1, 1):  # batch 1 twice: the repeat is a duplicate
            emit(orders, extra={"batch": batch}, partition_key=f"batch-{batch}", dedupe_key=f"batch-{batch}")

    load() >> AssetbusEmitOperator(task_id="announce", asset=orders, partition_key="{{ run_id }}")


def test_the_dag_emits_offline() -> None:
    with offline(registered=[orders]) as bus:
        run = dag.test()
    assert run.state == "success"
    # load's batches (the repeat answered `duplicate`), its success callback, then the operator
    assert [event.partition_key for event in bus.emitted(orders)] == ["batch-0", "batch-1", None, run.run_id]
    assert [receipt.status.value for receipt in bus.receipts] == ["accepted"] * 2 + ["duplicate"] + ["accepted"] * 2
    assert [event.source.task_id for event in bus.events] == ["load", "load", "load", "announce"]
    assert bus.events[2].extra is not None and bus.events[2].extra["loaded"] is True


if __name__ == "__main__":
    test_the_dag_emits_offline()
    print("dag.test() emitted offline: ok")
