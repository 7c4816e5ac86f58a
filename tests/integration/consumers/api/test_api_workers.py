"""`assetbus run api --workers 2`: two worker processes on one socket, both serving, stopped by one SIGTERM."""

from __future__ import annotations

import httpx
import psutil

from assetbus.producers.tokens import task_token
from assetbus.schemas import Topics, task_instance_id
from assetbus.settings import Settings
from tests.integration.consumers.api.workers import api_workers


async def test_two_workers_serve_the_api_and_stop_together(infra: Settings, db_url: str, topics: Topics,
                                                           token_secret: str) -> None:
    token = task_token(token_secret, "d", "r", "t")
    path = f"/execution/state/ti/{task_instance_id('d', 'r', 't', -1)}/checkpoint"
    async with api_workers(infra, db_url, topics, token_secret) as api:
        workers = psutil.Process(api.process.pid).children()
        assert len(workers) == 2
        auth = {"Authorization": f"Bearer {token}"}
        # several fresh connections: the kernel spreads them over both workers; each one has the database
        for i in range(6):
            async with httpx.AsyncClient(base_url=api.url, timeout=10) as fresh:
                put = await fresh.put(path, json={"value": f"{i}"}, headers=auth)
                assert put.status_code in (200, 204), put.text
                got = await fresh.get(path, headers=auth)
                assert got.status_code == 200 and got.json()["value"] == f"{i}"
    assert api.exit_code == [0]
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
