"""assetbus in Airflow's event-driven vocabulary, in a real Airflow 3.3.2 with its triggerer.

- An `AssetWatcher` whose trigger is `AssetbusReadinessTrigger` starts an asset-triggered run of
  `readiness_watched` from a readiness signal on assetbus's readiness topic
  (tests/integration/airflow/dags/readiness_watched.py).
- A deferrable `AssetbusPartitionSensor` defers (no worker slot held) until assetbus stores the partition it
  waits for, then succeeds with that stored event (tests/integration/airflow/dags/partition_sensed.py).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaProducer

from assetbus.infra.airflow import airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import emit_partitions

WATCHED = "readiness_watched"
SENSED = AssetRef(name="airflow_test.sensed", uri="s3://example/sensed")


def _wait(condition: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(1.0)


async def test_a_readiness_signal_starts_an_asset_triggered_run_through_an_asset_watcher(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, infra: Settings) -> None:
    topics = Topics(prefix=airflow_stack.topic_prefix)
    await ensure_topics(infra.kafka, topics, {topics.readiness(WATCHED): 1})
    before = {run["dag_run_id"] for run in airflow_api.runs(WATCHED)}
    signal = ReadinessSignal(run_id=f"rs-{uuid.uuid4().hex[:8]}", dag_id=WATCHED, partition_key="2026-11-30",
                             generation=1, events=[], created_at=datetime.now(UTC), origin="scheduler")
    producer = AIOKafkaProducer(bootstrap_servers=airflow_stack.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(topics.readiness(WATCHED), signal.model_dump_json().encode(),
                                     key=b"2026-11-30")
    finally:
        await producer.stop()

    def new_run() -> dict[str, Any] | None:
        runs = [run for run in airflow_api.runs(WATCHED) if run["dag_run_id"] not in before]
        return runs[0] if runs else None

    run = await asyncio.to_thread(_wait, new_run, 240, "an asset-triggered run of readiness_watched")
    assert run["run_type"] == "asset_triggered"
    finished = await asyncio.to_thread(airflow_api.wait_run, WATCHED, run["dag_run_id"])
    assert finished["state"] == "success"
    seen = airflow_api.xcom(WATCHED, run["dag_run_id"], "consume")
    assert {"run_id": signal.run_id, "partition_key": "2026-11-30"} in seen


async def test_the_deferrable_sensor_completes_once_the_partition_is_stored(
        airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    partition = f"p-{uuid.uuid4().hex[:8]}"
    run_id = f"sense-{partition}"
    airflow_api.trigger("partition_sensed", run_id, {"partition": partition})

    def deferred() -> bool:
        state: str = airflow_api.task_instance("partition_sensed", run_id, "wait_stored")["state"]
        return state == "deferred"

    await asyncio.to_thread(_wait, deferred, 240, "the sensor to defer")
    await emit_partitions(airflow_stack, SENSED, [(f"{partition}-other", None)])  # another partition: not it
    assert airflow_api.run("partition_sensed", run_id)["state"] == "running"
    receipts = await emit_partitions(airflow_stack, SENSED, [(partition, None)])
    finished = await asyncio.to_thread(airflow_api.wait_run, "partition_sensed", run_id)
    assert finished["state"] == "success"
    event = airflow_api.xcom("partition_sensed", run_id, "wait_stored")
    assert (event["event_id"], event["partition_key"], event["asset"]["name"]) == \
        (receipts[0].id, partition, SENSED.name)


def test_airflow_lists_the_assetbus_triggers(airflow_stack: AirflowStack) -> None:
    done = subprocess.run([str(airflow_bin(airflow_stack.airflow.venv)), "providers", "triggers", "--output", "json"],
                          env=airflow_stack.airflow.env(), capture_output=True, text=True, timeout=180, check=True)
    mine = [t for t in json.loads(done.stdout) if t["package_name"] == "assetbus-sdk"]
    assert mine == [{"package_name": "assetbus-sdk", "class": "assetbus.producers.airflow.triggers",
                     "integration_name": "assetbus"}]
