"""An Airflow DAG scheduled by an AssetWatcher on assetbus readiness signals (tests only).

The watcher's trigger reads the readiness topic of `readiness_watched` in Airflow's triggerer (Kafka and
the topic prefix from the connection `assetbus_triggerer`); each signal becomes an asset event, and the
task returns the signals (run id, partition key) that triggered its run.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Asset, AssetWatcher, task

from assetbus.producers.airflow.triggers import AssetbusReadinessTrigger

ready = Asset("airflow_test.readiness_watched", uri="assetbus://airflow_test/readiness_watched", watchers=[
    AssetWatcher(name="assetbus_readiness",
                 trigger=AssetbusReadinessTrigger(dag_id="readiness_watched", conn_id="assetbus_triggerer")),
])

with DAG(dag_id="readiness_watched", schedule=[ready], catchup=False):

    @task
    def consume(**context: Any) -> list[dict[str, Any]]:
        events = context["triggering_asset_events"][ready]
        return [{"run_id": e.extra["payload"]["run_id"], "partition_key": e.extra["payload"]["partition_key"]}
                for e in events]

    consume()
