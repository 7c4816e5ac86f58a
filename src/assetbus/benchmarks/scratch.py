"""Scratch databases for the benchmarks: created and migrated for one run, dropped after it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy.engine import make_url

from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.migrate import upgrade_async
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics


async def create_database(admin_url: str, name: str) -> str:
    """Create database `name` on the server of `admin_url`, migrate it, and return its URL."""
    await _admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    await upgrade_async(url)
    return url


async def drop_database(admin_url: str, name: str) -> None:
    await _admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _admin_execute(admin_url: str, statement: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(admin_url))
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@asynccontextmanager
async def scratch_pipeline(settings: Settings, more_topics: Callable[[Topics], list[str]] = lambda _: []
                           ) -> AsyncIterator[tuple[Topics, str]]:
    """A fresh topic prefix (its core topics created) and a fresh migrated database: (topics, database URL).
    Both are removed afterwards, with the topics `more_topics` names (readiness topics, say)."""
    tag = uuid.uuid4().hex[:10]
    topics = Topics(prefix=f"bench{tag}")
    db_name = f"assetbus_bench_{tag}"
    await ensure_topics(settings.kafka, topics)
    db_url = await create_database(settings.database_url, db_name)
    try:
        yield topics, db_url
    finally:
        await delete_topics(settings.kafka, [*topics.core(), *more_topics(topics)])
        await drop_database(settings.database_url, db_name)
