"""Shared by the tests of the readiness watcher (an AssetWatcher on `AssetbusReadinessTrigger` in Airflow's
triggerer): readiness signals (of `readiness_watched`, unless said) published to their topic, and the asset
events Airflow made of them."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaProducer

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import ReadinessSignal
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.forwarding import wait_for

WATCHED = "readiness_watched"


def readiness_signal(partition_key: str, dag_id: str = WATCHED) -> ReadinessSignal:
    return ReadinessSignal(run_id=f"rs-{uuid.uuid4().hex[:8]}", dag_id=dag_id, partition_key=partition_key,
                           generation=1, events=[], created_at=datetime.now(UTC), origin="scheduler")


async def publish(stack: AirflowStack, topic: str, *signals: ReadinessSignal, every_s: float = 0.0) -> None:
    """Publish the signals in order, each acknowledged (and `every_s` more before the next: a trickle)."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.bootstrap_servers)
    await producer.start()
    try:
        for signal in signals:
            await producer.send_and_wait(topic, signal.model_dump_json().encode(),
                                         key=(signal.partition_key or "").encode())
            await asyncio.sleep(every_s)
    finally:
        await producer.stop()


def signal_run_id(event: dict[str, Any]) -> str | None:
    """The run id of the readiness signal an Airflow asset event was made of (None: another event)."""
    run_id: str | None = ((event.get("extra") or {}).get("payload") or {}).get("run_id")
    return run_id


def watched_events(airflow_api: AirflowApi, **params: Any) -> list[dict[str, Any]]:
    """Airflow's asset events (of the asset `asset_id`, if given), newest first (at most 1000).

    Airflow 3.3.2's `GET /assets/events` answers 500 while an event's asset-triggered run has no start date
    yet (its response model requires one): asked again until it answers, for at most 60 s."""
    listed: tuple[list[dict[str, Any]]] = wait_for(lambda: _listed(airflow_api, params), 60,
                                                   "Airflow to list its asset events", every_s=1.0)
    return listed[0]


def _listed(airflow_api: AirflowApi, params: dict[str, Any]) -> tuple[list[dict[str, Any]]] | None:
    """Airflow's asset events (in a tuple: an empty list is an answer too), or None after a 500."""
    try:
        events: list[dict[str, Any]] = airflow_api.get("/assets/events", limit=1000, order_by="-timestamp",
                                                       **params)["asset_events"]
    except httpx.HTTPStatusError as error:
        if error.response.status_code != 500:
            raise
        return None
    return (events,)
