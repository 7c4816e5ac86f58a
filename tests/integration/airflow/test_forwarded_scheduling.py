"""Airflow's own asset scheduling runs from events emitted through assetbus and forwarded into Airflow: a DAG
with `schedule=[asset]`, and a DAG on `PartitionedAssetTimetable` whose roll-up mapper (Airflow's) turns 24
hourly partitions into one daily run. The DAG files hold no assetbus code."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.forwarding import airflow_asset_id, emit, start_forwarder, wait_for

NATIVE = AssetRef(name="forward.native", uri="s3://forward/native")
HOURLY = AssetRef(name="forward.hourly", uri="s3://forward/hourly")


def _asset_runs(api: AirflowApi, dag_id: str) -> list[dict[str, Any]]:
    return [r for r in api.runs(dag_id) if r["run_type"] == "asset_triggered"]


def _upstream(api: AirflowApi, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = api.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/upstreamAssetEvents")[
        "asset_events"]
    return events


async def test_a_dag_scheduled_on_the_asset_runs_from_a_forwarded_event(
        airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    await asyncio.to_thread(airflow_asset_id, airflow_api, airflow_stack, NATIVE, "forward_native")
    assert _asset_runs(airflow_api, "forward_native") == []
    start_forwarder(airflow_stack, "forwarder-native", [NATIVE.name])
    try:
        [receipt] = await emit(airflow_stack, NATIVE, [None], extra={"rows": 41})
        [run] = await asyncio.to_thread(wait_for, lambda: _asset_runs(airflow_api, "forward_native"), 180,
                                        "Airflow to run forward_native from the forwarded event", 1.0)
        done = await asyncio.to_thread(airflow_api.wait_run, "forward_native", run["dag_run_id"])
        assert done["state"] == "success"
        [event] = _upstream(airflow_api, "forward_native", run["dag_run_id"])
        assert event["extra"]["assetbus"]["event_id"] == receipt.event_id
        assert airflow_api.xcom("forward_native", run["dag_run_id"], "consume") == [41]
    finally:
        airflow_stack.stop_service("forwarder-native")


async def test_airflows_roll_up_mapper_makes_one_daily_run_of_24_forwarded_hours(
        airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    await asyncio.to_thread(airflow_asset_id, airflow_api, airflow_stack, HOURLY, "forward_daily_rollup")
    start_forwarder(airflow_stack, "forwarder-rollup", [HOURLY.name])
    try:
        receipts = await emit(airflow_stack, HOURLY, [f"2026-11-20T{hour:02d}" for hour in range(24)])
        [run] = await asyncio.to_thread(wait_for, lambda: _asset_runs(airflow_api, "forward_daily_rollup"), 180,
                                        "Airflow's roll-up to run forward_daily_rollup", 1.0)
        done = await asyncio.to_thread(airflow_api.wait_run, "forward_daily_rollup", run["dag_run_id"])
        assert done["state"] == "success"
        assert done["partition_key"] == "2026-11-20"
        assert airflow_api.xcom("forward_daily_rollup", run["dag_run_id"], "report") == "2026-11-20"
        upstream = _upstream(airflow_api, "forward_daily_rollup", run["dag_run_id"])
        assert sorted(e["extra"]["assetbus"]["event_id"] for e in upstream) == sorted(r.event_id or 0 for r in receipts)
        assert len(_asset_runs(airflow_api, "forward_daily_rollup")) == 1
    finally:
        airflow_stack.stop_service("forwarder-rollup")
