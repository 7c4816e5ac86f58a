"""The execution API benchmark behind `assetbus bench api`: latency and throughput, with their conditions.

Runs `assetbus run api` and `assetbus run persister` as subprocesses on a fresh database and topic
prefix (both removed afterwards) and drives them over HTTP from this process:
task-state writes and reads (one client at a time, then `--concurrency` task instances at once)
and HTTP emits waiting for their receipts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg
import httpx
from rich.table import Table
from sqlalchemy.engine import make_url

from assetbus.consumers.storage import create_engine, register_asset
from assetbus.migrate import upgrade_async
from assetbus.producers.tokens import task_token
from assetbus.schemas import Topics, task_instance_id
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

ASSET = {"name": "bench.orders", "uri": "s3://bench/orders/"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def _fresh_stack(s: Settings) -> AsyncIterator[tuple[str, str]]:
    """A fresh database and topic prefix with the API and a persister running on them: (url, token secret)."""
    name = f"assetbus_bench_api_{uuid.uuid4().hex[:8]}"
    admin = make_url(s.database_url).set(drivername="postgresql")
    conn = await asyncpg.connect(admin.render_as_string(hide_password=False))
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    db_url = make_url(s.database_url).set(database=name).render_as_string(hide_password=False)
    topics = Topics(prefix=f"bench-api-{uuid.uuid4().hex[:8]}")
    port, secret = _free_port(), s.token_secret
    env = {**os.environ, "DATABASE_URL": db_url, "ASSETBUS_TOPIC_PREFIX": topics.prefix,
           "ASSETBUS_TOKEN_SECRET": secret, "KAFKA_BOOTSTRAP_SERVERS": s.bootstrap_servers}
    services: list[asyncio.subprocess.Process] = []
    try:
        await upgrade_async(db_url)
        await ensure_topics(s.kafka, topics)
        engine = create_engine(db_url)
        async with engine.begin() as c:
            await register_asset(c, ASSET["name"], ASSET["uri"])
        await engine.dispose()
        cli = [sys.executable, "-c", "from assetbus.cli.main import main; main()", "run"]
        # the persister in a group of its own: another run's persister must not share its rebalances
        persister = ["persister", "--group-id", f"{topics.prefix}-persister", "--log-level", "WARNING"]
        for args in (["api", "--port", str(port), "--log-level", "WARNING"], persister):
            services.append(await asyncio.create_subprocess_exec(*cli, *args, env=env,
                                                                 stdout=asyncio.subprocess.DEVNULL))
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient() as client:
            for _ in range(600):  # 60 s: start-up on a loaded 2-core machine
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{url}/health")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError("the API did not start")
        yield url, secret
    finally:
        for service in services:
            service.terminate()
        for service in services:
            await asyncio.wait_for(service.wait(), 20)
        await delete_topics(s.kafka, list(topics.core()))
        conn = await asyncpg.connect(admin.render_as_string(hide_password=False))
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def _timed(n: int, concurrency: int, op: Callable[[int], Awaitable[None]]) -> tuple[float, list[float]]:
    """Run op(0..n-1) with `concurrency` workers; (elapsed seconds, per-call latencies in ms)."""
    latencies: list[float] = []
    queue = iter(range(n))

    async def worker() -> None:
        for i in queue:
            started = time.perf_counter()
            await op(i)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


@dataclass(frozen=True)
class ApiRow:
    operation: str
    per_s: float
    p50_ms: float
    p99_ms: float


@dataclass
class ApiReport:
    """One row per measured operation, in the order measured."""

    rows: list[ApiRow] = field(default_factory=list)

    def row(self, operation: str) -> ApiRow:
        return next(r for r in self.rows if r.operation == operation)

    def table(self) -> Table:
        table = Table("operation", "rate", "p50 ms", "p99 ms", title="assetbus bench api", title_justify="left")
        for r in self.rows:
            table.add_row(r.operation, f"[bold]{r.per_s:,.0f}[/]/s", f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}")
        return table


def _row(table: ApiReport, label: str, n: int, elapsed: float, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    table.rows.append(ApiRow(label, n / elapsed, statistics.median(ordered), p99))


async def measure(s: Settings, n: int, concurrency: int, emits: int) -> ApiReport:
    table = ApiReport()
    async with _fresh_stack(s) as (url, secret), httpx.AsyncClient(
            base_url=url, limits=httpx.Limits(max_connections=concurrency * 2), timeout=30) as client:
        tokens = [task_token(secret, "bench", "run-1", "load", map_index=i) for i in range(concurrency)]
        paths = [f"/execution/state/ti/{task_instance_id('bench', 'run-1', 'load', i)}" for i in range(concurrency)]

        async def put(i: int) -> None:
            w = i % concurrency
            r = await client.put(f"{paths[w]}/k{i % 50}", json={"value": f'{{"batch": {i}}}'},
                                 headers={"Authorization": f"Bearer {tokens[w]}"})
            r.raise_for_status()

        async def get(i: int) -> None:
            w = i % concurrency
            r = await client.get(f"{paths[w]}/k{i % 50}", headers={"Authorization": f"Bearer {tokens[w]}"})
            r.raise_for_status()

        async def emit(i: int) -> None:
            r = await client.post("/execution/asset-events/emit", headers={"Authorization": f"Bearer {tokens[0]}"},
                                  json={"asset": ASSET, "extra": {"batch": i}, "dedupe_key": f"batch-{i}"})
            r.raise_for_status()

        await _timed(100, concurrency, put)  # warm-up: connections, pools, JIT-free but cache-warm
        _row(table, "task state PUT, 1 client", n, *await _timed(n, 1, put))
        _row(table, "task state GET, 1 client", n, *await _timed(n, 1, get))
        _row(table, f"task state PUT, {concurrency} clients", n, *await _timed(n, concurrency, put))
        _row(table, f"task state GET, {concurrency} clients", n, *await _timed(n, concurrency, get))
        await _timed(20, 1, lambda i: emit(emits + i))  # warm-up: the persister joins its group
        _row(table, "HTTP emit → receipt, 1 client", emits, *await _timed(emits, 1, emit))
        _row(table, f"HTTP emit → receipt, {concurrency} clients", emits,
             *await _timed(emits, concurrency, lambda i: emit(emits * 2 + i)))
    return table
