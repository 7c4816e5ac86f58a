"""Shared by the Airflow tests: emitting as an upstream task, reading the session's database back."""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow_stack import TRIGGERER, AirflowStack
from assetbus.infra.ports import free_port
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Receipt, Topics

ORDERS = AssetRef(name="airflow_demo.orders", uri="s3://example/orders")
REPLICA_FEED = AssetRef(name="airflow_demo.replica_feed", uri="s3://example/replica_feed")
"""The asset only the tests' orders_replica DAG waits for (so its tests start no runs of the examples)."""
HOURLY_CLICKS = AssetRef(name="airflow_demo.hourly_clicks", uri="s3://example/clicks/hourly")


async def emit_partitions(stack: AirflowStack, asset: AssetRef, partitions: Sequence[tuple[str, datetime | None]],
                          every_s: float = 0.0) -> list[Receipt]:
    """Emit one event per (key, date) as an upstream task outside Airflow, and wait for each receipt (and
    `every_s` more before the next: a trickle)."""
    token = task_token(stack.token_secret, "upstream_feed", f"feed-{uuid.uuid4().hex[:8]}", "load")
    async with AsyncEmitter(stack.bootstrap_servers, token, topics=Topics(prefix=stack.topic_prefix),
                            receipt_timeout_s=30) as emitter:
        receipts = []
        for key, date in partitions:
            receipts.append(await emitter.emit(asset, partition_key=key, partition_date=date))
            await asyncio.sleep(every_s)
    assert all(r.accepted for r in receipts), receipts
    return receipts


def bridge_args(stack: AirflowStack, *more: str) -> tuple[str, ...]:
    """`assetbus run ARGS` of a bridge serving every DAG Airflow tags `assetbus` (no `--dag`)."""
    return ("airflow-bridge", "--airflow-metadata-url", stack.metadata_url, *more)


BRIDGE_KILLED_QUICKLY = ("--poll-interval-s", "1", "--session-timeout-ms", "6000", "--lease-s", "10")
"""For a bridge that a test kills -9 (or stops while Airflow refuses it): its successor waits for the run it held,
10 s here (lease, 60 s by default), and gets its partitions after 6 s (group session, 10 s); outcomes are read
every second."""

QUICK_TAKEOVER = {"AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "8"}
"""For a triggerer started after a kill -9: it takes the dead one's triggers 8 s after its last heartbeat (default
30 s)."""


def restart_triggerer(stack: AirflowStack, sig: int = signal.SIGTERM, env: Mapping[str, str] | None = None) -> None:
    """Stop Airflow's triggerer (kill -9 of its supervisor and runner with sig=SIGKILL) and start it again,
    with `env` added to its environment."""
    stack.stop_service(TRIGGERER, sig)
    stack._start_triggerer(env)


def second_api(stack: AirflowStack, name: str, **env: str) -> Iterator[str]:
    """Another `assetbus run api` on the stack (service `name`, `env` added to the stack's): its URL, while it
    runs."""
    port = free_port()
    stack.service(name, "api", **env, ASSETBUS_API_PORT=str(port))
    url = f"http://127.0.0.1:{port}"
    try:
        stack.wait_service(name, f"{url}/healthz")
        yield url
    finally:
        stack.stop_service(name)


async def events_of(engine: AsyncEngine, dag_id: str, run_id: str | None = None) -> list[dict[str, Any]]:
    """Stored events emitted by a DAG (one run of it, if given), oldest first, with their asset's name."""
    async with engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT e.id, a.name AS asset, e.partition_key, e.dedupe_key, e.source_kind, e.dag_id, e.run_id, "
            "e.task_id, e.map_index, e.try_number, e.extra FROM asset_events e JOIN assets a ON a.id = e.asset_id "
            "WHERE e.dag_id = :dag AND (CAST(:run AS text) IS NULL OR e.run_id = :run) ORDER BY e.id"),
            {"dag": dag_id, "run": run_id})
        return [dict(row._mapping) for row in rows]


async def runs_of(engine: AsyncEngine, dag_id: str) -> list[dict[str, Any]]:
    """assetbus consumer runs of a DAG, oldest first."""
    async with engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT run_id, partition_key, status, external_run_id, external_state, detail, events "
            "FROM consumer_runs WHERE dag_id = :dag ORDER BY id"), {"dag": dag_id})
        return [dict(row._mapping) for row in rows]
