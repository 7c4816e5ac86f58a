"""Readiness starts real Airflow DAG runs through the bridge: one run per partition, and a roll-up.

The consumer DAGs are the examples (examples/airflow/dags/orders_by_partition.py, daily_clicks_report.py),
declared once in Airflow: the stack synced their rules from their timetables, and the bridge runs without
`--dag`, serving every DAG Airflow tags `assetbus`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.scrape import scrape
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.infra.ports import free_port
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import HOURLY_CLICKS, ORDERS, bridge_args, emit_partitions, runs_of


@pytest.fixture
def bridge(airflow_stack: AirflowStack) -> Iterator[str]:
    """The bridge's probes URL (it serves /metrics, /healthz and /readyz)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    airflow_stack.service("bridge", *bridge_args(airflow_stack, "--poll-interval-s", "1", "--metrics-port", str(port)))
    airflow_stack.wait_service("bridge", f"{url}/readyz")
    yield url
    airflow_stack.stop_service("bridge")


async def test_each_ready_partition_gets_one_airflow_run_whose_task_sees_the_key(
        bridge: str, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    keys = [f"region-{uuid.uuid4().hex[:6]}-{i}" for i in range(3)]
    receipts = await emit_partitions(airflow_stack, ORDERS, [(key, None) for key in keys])

    async def finished() -> list[dict[str, Any]]:
        runs = [r for r in await runs_of(stack_engine, "orders_by_partition") if r["partition_key"] in keys]
        return runs if len(runs) == len(keys) and all(r["status"] == "success" for r in runs) else []

    runs = await wait_for(finished, timeout_s=240, interval=1, what="three Airflow runs to succeed")
    airflow_runs = [r for r in airflow_api.runs("orders_by_partition") if r["partition_key"] in keys]
    assert sorted(r["partition_key"] for r in airflow_runs) == sorted(keys)  # one run per partition
    by_key = {r["partition_key"]: r for r in airflow_runs}
    for run, receipt in zip(sorted(runs, key=lambda r: keys.index(r["partition_key"])), receipts, strict=True):
        airflow_run = by_key[run["partition_key"]]
        assert airflow_run["dag_run_id"] == run["external_run_id"] == f"assetbus__{run['run_id']}"
        assert airflow_run["state"] == "success" and run["external_state"] == "success"
        assert airflow_run["conf"]["assetbus"]["event_ids"] == [receipt.id]
        seen = airflow_api.xcom("orders_by_partition", airflow_run["dag_run_id"], "load_partition")
        assert seen == {"partition_key": run["partition_key"], "event_ids": [receipt.id]}
    listed = airflow_stack.cli("runs", "list", "--dag", "orders_by_partition", COLUMNS="200")
    assert runs[0]["external_run_id"] in listed and "success" in listed
    metrics = scrape(f"{bridge}/metrics")  # created, recorded, and the outcomes read back from Airflow
    assert metrics.value("assetbus_bridge_airflow_runs") >= len(keys)
    assert metrics.value("assetbus_bridge_run_outcomes") >= len(keys)
    assert metrics.histogram("assetbus_bridge_trigger_seconds").count >= len(keys)
    async with httpx.AsyncClient(timeout=10) as client:
        ready = await client.get(f"{bridge}/readyz")
    assert ready.status_code == 200, ready.text


async def test_hourly_to_daily_roll_up_starts_one_airflow_run_once_all_24_hours_arrived(
        bridge: str, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    day = datetime(2026, 10, 1, tzinfo=UTC)
    hours = [day + timedelta(hours=h) for h in range(24)]
    await emit_partitions(airflow_stack, HOURLY_CLICKS, [(hour.isoformat(), hour) for hour in hours[:23]])

    async def queued() -> bool:
        return await airflow_stack_waiting(airflow_stack, "2026-10-01")

    await wait_for(queued, timeout_s=60, interval=0.5, what="23 hours queued for 2026-10-01")
    assert await runs_of(stack_engine, "daily_clicks_report") == []  # 23 of 24 hours: not ready
    await emit_partitions(airflow_stack, HOURLY_CLICKS, [(hours[23].isoformat(), hours[23])])

    async def finished() -> list[dict[str, object]]:
        runs = await runs_of(stack_engine, "daily_clicks_report")
        return runs if runs and runs[0]["status"] == "success" else []

    runs = await wait_for(finished, timeout_s=240, interval=1, what="the daily run to succeed in Airflow")
    assert len(runs) == 1 and runs[0]["partition_key"] == "2026-10-01"
    airflow_runs = airflow_api.runs("daily_clicks_report")
    assert [r["partition_key"] for r in airflow_runs] == ["2026-10-01"]
    report = airflow_api.xcom("daily_clicks_report", airflow_runs[0]["dag_run_id"], "report")
    assert report == {"partition_key": "2026-10-01", "hours": 24}


async def airflow_stack_waiting(stack: AirflowStack, key: str) -> bool:
    """`assetbus runs waiting` lists the day with 23 queued events."""
    out = stack.cli("runs", "waiting", "--dag", "daily_clicks_report", COLUMNS="200")
    return key in out and "23" in out
