"""An Airflow DAG scheduled by an AssetWatcher whose trigger is common-messaging's MessageQueueTrigger on the
`assetbus` queue (tests only).

`scheme="assetbus"` makes the trigger `AssetbusReadinessTrigger(dag_id="queue_watched", ...)`: the triggerer
reads the readiness signals of the assetbus consumer DAG `queue_watched` (Kafka and the topic prefix from the
connection `assetbus_triggerer`), each one an asset event; the task returns the signals of its run.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger
from airflow.sdk import DAG, Asset, AssetWatcher, task

# [START assetbus_message_queue_trigger]
trigger = MessageQueueTrigger(scheme="assetbus", dag_id="queue_watched", conn_id="assetbus_triggerer")
# or: MessageQueueTrigger(queue="assetbus://readiness/queue_watched?conn_id=assetbus_triggerer")

ready = Asset("airflow_test.queue_watched", uri="assetbus://airflow_test/queue_watched",
              watchers=[AssetWatcher(name="assetbus_queue", trigger=trigger)])

with DAG(dag_id="queue_watched", schedule=[ready], catchup=False):

    @task
    def consume(**context: Any) -> list[dict[str, Any]]:
        # each signal: extra["payload"] (Airflow gives events from a watcher no partition key of their own)
        return [{"run_id": event.extra["payload"]["run_id"], "partition_key": event.extra["payload"]["partition_key"]}
                for event in context["triggering_asset_events"][ready]]

    consume()
# [END assetbus_message_queue_trigger]
