"""The bridge under failure, against real Airflow: kill -9 mid-stream, and a refused service account.

`orders_replica` stays paused: Airflow creates its runs (queued) but never executes them, so these
tests look at run creation alone.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow_stack import AirflowStack
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import BRIDGE_KILLED_QUICKLY, REPLICA_FEED, emit_partitions, runs_of

DAG = "orders_replica"


@pytest.fixture(scope="module")
def paused(airflow_api: AirflowApi) -> Iterator[None]:
    airflow_api.set_paused(DAG, True)
    yield


def bridge(stack: AirflowStack, **env: str) -> None:
    stack.service("replica-bridge", "airflow-bridge", "--dag", DAG, *BRIDGE_KILLED_QUICKLY, **env)


async def test_kill_9_of_the_bridge_mid_stream_still_gives_one_airflow_run_per_partition(
        paused: None, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    keys = [f"kill-{uuid.uuid4().hex[:6]}-{i:02d}" for i in range(12)]
    await emit_partitions(airflow_stack, REPLICA_FEED, [(key, None) for key in keys])

    def created() -> list[str]:
        return [r["partition_key"] for r in airflow_api.runs(DAG) if r["partition_key"] in keys]

    async def some() -> bool:
        return len(created()) >= 3

    bridge(airflow_stack)
    try:
        await wait_for(some, timeout_s=120, interval=0.05, what="the bridge to create its first runs")
        airflow_stack.stop_service("replica-bridge", signal.SIGKILL)
        before = len(created())
        bridge(airflow_stack)

        async def recorded() -> bool:
            runs = [r for r in await runs_of(stack_engine, DAG) if r["partition_key"] in keys]
            return len(runs) == len(keys) and all(r["external_run_id"] for r in runs)

        await wait_for(recorded, timeout_s=180, interval=0.5, what="all twelve runs created and recorded")
    finally:
        airflow_stack.stop_service("replica-bridge")
    assert before < len(keys), "the bridge was killed after it had finished: nothing was under test"
    assert sorted(created()) == sorted(keys)  # exactly one Airflow run per partition
    for run in await runs_of(stack_engine, DAG):
        if run["partition_key"] in keys:
            assert run["status"] == "running" and run["external_state"] == "queued"  # paused: never executed


async def test_a_refused_service_account_backs_off_and_loses_no_signal(
        paused: None, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    key = f"auth-{uuid.uuid4().hex[:6]}"
    bridge(airflow_stack, ASSETBUS_AIRFLOW_PASSWORD="not-the-password")
    try:
        await emit_partitions(airflow_stack, REPLICA_FEED, [(key, None)])

        async def waiting() -> str:
            # the first signal the bridge meets (a redelivered one of the test before, possibly) carries it
            details = [str(r["detail"]) for r in await runs_of(stack_engine, DAG) if r["detail"]]
            return next((d for d in details if "waiting for Airflow" in d), "")

        detail = await wait_for(waiting, timeout_s=60, interval=0.2, what="the bridge to report the refusal")
        assert "waiting for Airflow" in detail and "refused the account" in detail, detail
        assert [r for r in airflow_api.runs(DAG) if r["partition_key"] == key] == []
    finally:
        airflow_stack.stop_service("replica-bridge")
    bridge(airflow_stack)  # the account fixed: the same signal goes through
    try:
        async def created() -> bool:
            return [r["partition_key"] for r in airflow_api.runs(DAG) if r["partition_key"] == key] == [key]

        await wait_for(created, timeout_s=120, interval=0.2, what="the run, once the account works")
    finally:
        airflow_stack.stop_service("replica-bridge")
