"""A deferrable AssetbusPartitionSensor waits for a partition assetbus has not stored yet (tests only).

Trigger it with conf {"partition": KEY}: the sensor defers to the triggerer until an event of
`airflow_test.sensed` for KEY is stored, and returns that event.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset

from assetbus.producers.airflow.sensors import AssetbusPartitionSensor

sensed = Asset("airflow_test.sensed", uri="s3://example/sensed")

with DAG(dag_id="partition_sensed", schedule=None, catchup=False):
    AssetbusPartitionSensor(task_id="wait_stored", asset=sensed, partition_key="{{ dag_run.conf['partition'] }}",
                            assetbus_conn_id="assetbus_triggerer", timeout=600)
