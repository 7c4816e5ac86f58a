"""assetbus in Airflow's event-driven vocabulary, in a real Airflow 3.3.2 with its triggerer.

- An `AssetWatcher` whose trigger is `AssetbusReadinessTrigger` starts an asset-triggered run of
  `readiness_watched` from a readiness signal on assetbus's readiness topic
  (tests/integration/airflow/dags/readiness_watched.py); a triggerer killed with -9 after it took the
  signal's event and before Airflow's database had it loses nothing: the restarted one hands it over once.
- A deferrable `AssetbusPartitionSensor` defers (no worker slot held) until assetbus stores the partition it
  waits for, then succeeds with that stored event (tests/integration/airflow/dags/partition_sensed.py).
"""

from __future__ import annotations

import asyncio
import json
import signal as signals
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from aiokafka import AIOKafkaProducer

from assetbus.infra.airflow import airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import emit_partitions

WATCHED = "readiness_watched"
HOLD_ENV = "ASSETBUS_TRIGGER_TEST_HOLD"
"""assetbus.producers.airflow.triggers.HOLD_ENV (that module needs Airflow, which this venv has not)."""
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


def _signal(partition_key: str) -> ReadinessSignal:
    return ReadinessSignal(run_id=f"rs-{uuid.uuid4().hex[:8]}", dag_id=WATCHED, partition_key=partition_key,
                           generation=1, events=[], created_at=datetime.now(UTC), origin="scheduler")


async def _publish(stack: AirflowStack, topic: str, signal: ReadinessSignal) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(topic, signal.model_dump_json().encode(),
                                     key=(signal.partition_key or "").encode())
    finally:
        await producer.stop()


def _asset_events_of(airflow_api: AirflowApi, run_id: str) -> list[dict[str, Any]]:
    """Airflow's asset events whose payload is the readiness signal `run_id`.

    Airflow 3.3.2's `GET /assets/events` answers 500 while an event's asset-triggered run has no start date
    yet (its response model requires one): asked again until it answers, for at most 60 s."""
    (events,) = _wait(lambda: _listed(airflow_api), 60, "Airflow to list its asset events")
    return [e for e in events if ((e.get("extra") or {}).get("payload") or {}).get("run_id") == run_id]


def _listed(airflow_api: AirflowApi) -> tuple[list[dict[str, Any]]] | None:
    """Airflow's asset events (in a tuple: an empty list is an answer too), or None after a 500."""
    try:
        events: list[dict[str, Any]] = airflow_api.get("/assets/events", limit=1000,
                                                       order_by="-timestamp")["asset_events"]
    except httpx.HTTPStatusError as error:
        if error.response.status_code != 500:
            raise
        return None
    return (events,)


async def test_a_readiness_signal_starts_an_asset_triggered_run_through_an_asset_watcher(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, infra: Settings) -> None:
    topics = Topics(prefix=airflow_stack.topic_prefix)
    await ensure_topics(infra.kafka, topics, {topics.readiness(WATCHED): 1})
    before = {run["dag_run_id"] for run in airflow_api.runs(WATCHED)}
    signal = _signal("2026-11-30")
    await _publish(airflow_stack, topics.readiness(WATCHED), signal)

    def new_run() -> dict[str, Any] | None:
        runs = [run for run in airflow_api.runs(WATCHED) if run["dag_run_id"] not in before]
        return runs[0] if runs else None

    run = await asyncio.to_thread(_wait, new_run, 240, "an asset-triggered run of readiness_watched")
    assert run["run_type"] == "asset_triggered"
    finished = await asyncio.to_thread(airflow_api.wait_run, WATCHED, run["dag_run_id"])
    assert finished["state"] == "success"
    seen = airflow_api.xcom(WATCHED, run["dag_run_id"], "consume")
    assert {"run_id": signal.run_id, "partition_key": "2026-11-30"} in seen


async def test_a_signal_taken_by_a_triggerer_killed_before_airflow_stored_it_reaches_airflow_once(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, infra: Settings, tmp_path: Path) -> None:
    topics = Topics(prefix=airflow_stack.topic_prefix)
    await ensure_topics(infra.kafka, topics, {topics.readiness(WATCHED): 1})
    signal = _signal("2026-12-01")
    hold = tmp_path / "hold"
    hold.write_text(signal.run_id)
    # the triggerer blocks once it has taken this signal's event, before the event is in Airflow's database
    airflow_stack.restart_triggerer(env={HOLD_ENV: str(hold)})
    await _publish(airflow_stack, topics.readiness(WATCHED), signal)
    await asyncio.to_thread(_wait, lambda: hold.read_text() == "held", 240, "the triggerer to take the signal")
    airflow_stack.restart_triggerer(signals.SIGKILL, env={HOLD_ENV: str(hold)})  # kill -9 in the window
    assert _asset_events_of(airflow_api, signal.run_id) == []  # the kill came before Airflow stored it

    await asyncio.to_thread(_wait, lambda: _asset_events_of(airflow_api, signal.run_id), 240,
                            "the restarted triggerer to hand the signal over")

    # Airflow holds the signal's event now (what the trigger promises). Which asset-triggered run consumes it is
    # Airflow's scheduling: after the restart the signals re-read from the last commit may be handed over beside
    # it and coalesce into one run, so the test counts the hand-overs of this signal, not runs.
    await asyncio.sleep(5)  # a second hand-over would be stored by now
    events = _asset_events_of(airflow_api, signal.run_id)
    assert len(events) == 1, events


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
