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
from pathlib import Path
from typing import Any

from assetbus.infra.airflow import airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import QUICK_TAKEOVER, emit_partitions, restart_triggerer
from tests.integration.airflow.watching import WATCHED, publish, readiness_signal, signal_run_id, watched_events

HELD_TRIGGERER = Path(__file__).parent / "held_triggerer"
"""On a triggerer's PYTHONPATH, its sitecustomize.py holds the triggerer once it took the signal the hold file names."""
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


def _held(hold: Path) -> dict[str, str]:
    return {"ASSETBUS_TRIGGER_TEST_HOLD": str(hold), "PYTHONPATH": str(HELD_TRIGGERER)}


def _asset_events_of(airflow_api: AirflowApi, run_id: str) -> list[dict[str, Any]]:
    return [e for e in watched_events(airflow_api) if signal_run_id(e) == run_id]


async def test_a_readiness_signal_starts_an_asset_triggered_run_through_an_asset_watcher(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, infra: Settings) -> None:
    topics = Topics(prefix=airflow_stack.topic_prefix)
    await ensure_topics(infra.kafka, topics, {topics.readiness(WATCHED): 1})
    before = {run["dag_run_id"] for run in airflow_api.runs(WATCHED)}
    signal = readiness_signal("2026-11-30")
    await publish(airflow_stack, topics.readiness(WATCHED), signal)

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
    signal = readiness_signal("2026-12-01")
    hold = tmp_path / "hold"
    hold.write_text(signal.run_id)
    # the triggerer blocks once it has taken this signal's event, before the event is in Airflow's database
    restart_triggerer(airflow_stack, env=_held(hold))
    await publish(airflow_stack, topics.readiness(WATCHED), signal)
    await asyncio.to_thread(_wait, lambda: hold.read_text() == "held", 240, "the triggerer to take the signal")
    restart_triggerer(airflow_stack, signals.SIGKILL, env={**_held(hold), **QUICK_TAKEOVER})  # kill -9 in the window
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
