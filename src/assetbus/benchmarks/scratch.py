"""What the benchmarks' runs share: a scratch database and topic prefix (created for one run, removed after it),
the environment of their service subprocesses, and counting records on the broker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy.engine import make_url

from assetbus.consumers.observe.lag import partitions_of
from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.infra.databases import create_database, drop_database
from assetbus.migrate import upgrade_async
from assetbus.producers.kafka.producer import started
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics


async def migrated_database(admin_url: str, name: str) -> str:
    """A new database `name` on `admin_url`'s server, migrated: its URL."""
    await create_database(admin_url, name)
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    await upgrade_async(url)
    return url


@asynccontextmanager
async def connection(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """An asyncpg connection to `database_url` (an SQLAlchemy URL), closed after the block."""
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        yield conn
    finally:
        await conn.close()


async def postgres_version(database_url: str) -> str:
    """PostgreSQL's `server_version`, such as `17.2 (Debian 17.2-1.pgdg120+1)`."""
    async with connection(database_url) as conn:
        return str(await conn.fetchval("SHOW server_version"))


@asynccontextmanager
async def scratch_pipeline(settings: Settings, more_topics: Callable[[Topics], list[str]] = lambda _: [], *,
                           keep: bool = False) -> AsyncIterator[tuple[Topics, str]]:
    """A fresh topic prefix (its core topics created) and a fresh migrated database: (topics, database URL).
    Both are removed afterwards (unless `keep`), with the topics `more_topics` names (readiness topics, say)."""
    tag = uuid.uuid4().hex[:10]
    topics = Topics(prefix=f"bench{tag}")
    db_name = f"assetbus_bench_{tag}"
    await ensure_topics(settings.kafka, topics)
    db_url = await migrated_database(settings.database_url, db_name)
    try:
        yield topics, db_url
    finally:
        if not keep:
            await delete_topics(settings.kafka, [*topics.core(), *more_topics(topics)])
            await drop_database(settings.database_url, db_name)


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float, what: str, every_s: float = 0.05) -> None:
    deadline = time.perf_counter() + timeout_s
    while not await check():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(every_s)


@asynccontextmanager
async def in_background(work: Coroutine[Any, Any, None]) -> AsyncIterator[asyncio.Task[None]]:
    """`work` as a task while the block runs, cancelled (and awaited) after it."""
    task = asyncio.create_task(work)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def at_least(count: Callable[[], Awaitable[int]], n: int) -> bool:
    """Whether `count()` reached `n`; False when it failed (a broker or a service not ready yet)."""
    with contextlib.suppress(Exception):
        return await count() >= n
    return False


def service_env(settings: Settings, topics: Topics, db_url: str) -> dict[str, str]:
    return {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers, "DATABASE_URL": db_url,
            "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": settings.token_secret}


async def stop(process: asyncio.subprocess.Process, timeout_s: float = 20.0, *, terminate: bool = True) -> None:
    """SIGTERM to the process if it still runs (not with `terminate=False`: it was told to end already);
    SIGKILL when it has not exited `timeout_s` later."""
    if terminate and process.returncode is None:
        process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()


@asynccontextmanager
async def record_count(settings: Settings, topics: list[str]) -> AsyncIterator[Callable[[], Awaitable[int]]]:
    """A function returning how many records these topics hold (the sum of their end offsets, on the broker).

    Watched on Kafka, not by counting rows: a `count(*)` every 20 ms took a quarter of a core of
    PostgreSQL from the scheduler it measures."""
    found = await partitions_of(settings.kafka, topics)
    parts = [TopicPartition(topic, p) for topic in topics for p in found[topic]]
    async with started(AIOKafkaConsumer(**settings.kafka.client_kwargs(), enable_auto_commit=False)) as consumer:

        async def count() -> int:
            return int(sum((await consumer.end_offsets(parts)).values()))

        yield count
