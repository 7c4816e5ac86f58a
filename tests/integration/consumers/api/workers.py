"""`assetbus run api --workers N` as a process of a test: started, answering `/healthz`, stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from assetbus.infra.ports import free_port
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for


@dataclass
class ApiWorkers:
    process: asyncio.subprocess.Process
    url: str
    exit_code: list[int] = field(default_factory=list)
    """The parent's exit code, once stopped."""


@asynccontextmanager
async def api_workers(infra: Settings, db_url: str, topics: Topics, token_secret: str, workers: int = 2,
                      **env: str) -> AsyncIterator[ApiWorkers]:
    """The API with `workers` processes on a free port, its `/healthz` answering; SIGTERM and its exit code after."""
    port = free_port()
    environment = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
                   "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret, **env}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "api", "--port", str(port), "--workers", str(workers),
        "--log-level", "WARNING", env=environment)
    running = ApiWorkers(process, f"http://127.0.0.1:{port}")
    try:
        async with httpx.AsyncClient(base_url=running.url, timeout=10) as client:
            async def up() -> bool:
                try:
                    return (await client.get("/healthz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_for(up, timeout_s=60, what="the API workers to answer")
        yield running
    finally:
        process.send_signal(signal.SIGTERM)
        running.exit_code.append(await asyncio.wait_for(process.wait(), 30))
