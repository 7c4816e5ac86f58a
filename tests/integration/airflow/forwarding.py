"""Shared by the forwarder's tests: a forwarder process, emitting with extras, what Airflow and the ledger hold."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow import airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.infra.ports import free_port
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Receipt, Topics
from tests.integration.airflow.airflow_api import AirflowApi


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.2) -> Any:
    """Poll `condition` until it is truthy (its value), or fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = condition()
            if value:
                return value
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(every_s)


async def until(condition: Callable[[], Awaitable[bool]], timeout_s: float, what: str, every_s: float = 0.2) -> None:
    """Await `condition` until it holds, or fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout_s
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        await asyncio.sleep(every_s)


def airflow_asset_id(api: AirflowApi, stack: AirflowStack, asset: AssetRef, dag_id: str) -> int:
    """Wait until Airflow has parsed `dag_id`, sync its assets into assetbus, and return the asset's Airflow id."""
    wait_for(lambda: api._http.get(f"/dags/{dag_id}").status_code == 200, 180, f"Airflow to parse {dag_id}", 1.0)

    def found() -> int | None:
        items = api.get("/assets", name_pattern=asset.name, limit=100)["assets"]
        return next((int(a["id"]) for a in items if a["name"] == asset.name and a["uri"] == asset.uri), None)

    asset_id: int = wait_for(found, 60, f"Airflow to know {asset.name}", 0.5)
    stack.sync_from_airflow()
    return asset_id


KILLED_QUICKLY = ("--session-timeout-ms", "6000", "--lease-s", "13")
"""For a forwarder that a test kills -9: its group gives its partitions away after 6 s, and its lease on the event
it was posting ends after 13 s, more than 3 times the 4 s Airflow timeout of `KILLED_QUICKLY_ENV` (the defaults:
10 s and 60 s, which its successor would wait out)."""
KILLED_QUICKLY_ENV = {"ASSETBUS_AIRFLOW_TIMEOUT_S": "4"}


def start_forwarder(stack: AirflowStack, name: str, assets: Sequence[str], group_id: str | None = None,
                    port: int | None = None, killed: bool = False) -> tuple[str, int]:
    """`assetbus run airflow-forwarder` for these assets (a fresh consumer group unless given); (group, port).
    `killed`: with `KILLED_QUICKLY`, for a test that kills it."""
    group_id = group_id or f"forwarder-{uuid.uuid4().hex[:8]}"
    port = port or free_port()
    args = ["airflow-forwarder", "--group-id", group_id, "--metrics-port", str(port)]
    for asset in assets:
        args += ["--asset", asset]
    if killed:
        args += KILLED_QUICKLY
    stack.service(name, *args, **(KILLED_QUICKLY_ENV if killed else {}))
    return group_id, port


async def emit(stack: AirflowStack, asset: AssetRef, keys: Sequence[str | None],
               extra: dict[str, Any] | None = None, every_s: float = 0.0) -> list[Receipt]:
    """One event per partition key, as an upstream task outside Airflow; each receipt waited for (and `every_s`
    more before the next: a trickle)."""
    token = task_token(stack.token_secret, "upstream_feed", f"feed-{uuid.uuid4().hex[:8]}", "load")
    async with AsyncEmitter(stack.bootstrap_servers, token, topics=Topics(prefix=stack.topic_prefix),
                            receipt_timeout_s=30) as emitter:
        receipts = []
        for key in keys:
            receipts.append(await emitter.emit(asset, partition_key=key, extra=extra or {}))
            await asyncio.sleep(every_s)
    assert all(r.accepted for r in receipts), receipts
    return receipts


def airflow_events(api: AirflowApi, asset_id: int) -> list[dict[str, Any]]:
    """Every Airflow asset event of the asset, in Airflow's id order."""
    events: list[dict[str, Any]] = []
    while True:
        page = api.get("/assets/events", asset_id=asset_id, limit=100, offset=len(events), order_by="timestamp")
        events.extend(page["asset_events"])
        if not page["asset_events"] or len(events) >= page["total_entries"]:
            return sorted(events, key=lambda e: int(e["id"]))


async def stored_ids(engine: AsyncEngine, asset: str) -> list[int]:
    async with engine.connect() as conn:
        rows = await conn.execute(text("SELECT e.id FROM asset_events e JOIN assets a ON a.id = e.asset_id "
                                       "WHERE a.name = :n ORDER BY e.id"), {"n": asset})
        return [int(r.id) for r in rows]


async def ledger(engine: AsyncEngine, asset: str) -> dict[str, int]:
    """The forwarder's ledger rows of the asset, counted by state."""
    async with engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT f.state, count(*) AS n FROM airflow_forwarded f JOIN asset_events e ON e.id = f.event_id "
            "JOIN assets a ON a.id = e.asset_id WHERE a.name = :n GROUP BY f.state"), {"n": asset})
        return {r.state: int(r.n) for r in rows}


def metric(port: int, name: str, **labels: str) -> float:
    """One sample of the forwarder's /metrics (0 when absent)."""
    body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
    for line in body.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return 0.0


def restart_api_server(stack: AirflowStack, jwt_secret: str | None = None) -> None:
    """kill -9 Airflow's api-server and start it again on the same port, with the same JWT secret unless given
    (another secret: every token issued before is refused with 401)."""
    airflow = stack.airflow
    process = airflow._processes["api-server"]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    wait_for(lambda: not _answers(airflow.url), 30, "the killed api-server to stop answering")
    log = (airflow.home / "api-server.log").open("ab")
    env = {**airflow.env(), **airflow.component_env.get("api-server", {}),
           "AIRFLOW__API_AUTH__JWT_SECRET": jwt_secret or airflow.jwt_secret}
    airflow._processes["api-server"] = subprocess.Popen(
        [str(airflow_bin(airflow.venv)), "api-server", "--port", str(airflow.port), "--host", "127.0.0.1"],
        env=env, stdout=log, stderr=log, start_new_session=True)


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/api/v2/monitor/health", timeout=1)
    except httpx.HTTPError:
        return False
    return True
