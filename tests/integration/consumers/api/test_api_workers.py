"""`assetbus run api --workers 2`: two worker processes on one socket, both serving, stopped by one SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx
import psutil

from assetbus.infra.ports import free_port
from assetbus.producers.tokens import task_token
from assetbus.schemas import Topics, task_instance_id
from assetbus.settings import Settings
from tests.helpers import wait_for


async def test_two_workers_serve_the_api_and_stop_together(infra: Settings, db_url: str, topics: Topics,
                                                           token_secret: str) -> None:
    port = free_port()
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "api", "--port", str(port), "--workers", "2",
        "--log-level", "WARNING", env=env)
    url = f"http://127.0.0.1:{port}"
    token = task_token(token_secret, "d", "r", "t")
    path = f"/execution/state/ti/{task_instance_id('d', 'r', 't', -1)}/checkpoint"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            async def up() -> bool:
                try:
                    return (await client.get("/healthz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_for(up, timeout_s=60, what="the API workers to answer")
            workers = psutil.Process(process.pid).children()
            assert len(workers) == 2
            auth = {"Authorization": f"Bearer {token}"}
            # several fresh connections: the kernel spreads them over both workers; each one has the database
            for i in range(6):
                async with httpx.AsyncClient(base_url=url, timeout=10) as fresh:
                    put = await fresh.put(path, json={"value": f"{i}"}, headers=auth)
                    assert put.status_code in (200, 204), put.text
                    got = await fresh.get(path, headers=auth)
                    assert got.status_code == 200 and got.json()["value"] == f"{i}"
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 30)
    assert code == 0
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
