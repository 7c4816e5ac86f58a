"""An AssetWatcher on assetbus readiness signals whose events never start a run (tests only: the chaos harness).

The watcher's trigger reads the readiness topic of `chaos_watched` in Airflow's triggerer, like
`readiness_watched`; each signal becomes an asset event of `airflow_test.chaos_watched`. The DAG waits for that
asset *and* one that never has an event, so Airflow stores and queues the events and starts no run: the harness
counts the events while the triggerer is killed, without a run per signal to schedule (and Airflow 3.3.2's
`GET /assets/events` answers 500 while an event's run is queued without a start date).
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset, AssetWatcher, task

from assetbus.producers.airflow.triggers import AssetbusReadinessTrigger

watched = Asset("airflow_test.chaos_watched", uri="assetbus://airflow_test/chaos_watched", watchers=[
    AssetWatcher(name="assetbus_chaos",
                 trigger=AssetbusReadinessTrigger(dag_id="chaos_watched", conn_id="assetbus_triggerer")),
])
never = Asset("airflow_test.never_emitted", uri="assetbus://airflow_test/never_emitted")

with DAG(dag_id="chaos_watched", schedule=(watched & never), catchup=False):

    @task
    def consume() -> None:
        """Never runs."""

    consume()
