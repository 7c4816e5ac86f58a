"""Fixtures of the persister's integration tests: a registered asset, a task token, persister processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.producers import task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.integration.consumers.persister.streams import PersisterProcess

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")


@pytest.fixture
async def orders(engine: AsyncEngine) -> AssetRef:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    return ORDERS


@pytest.fixture
async def no_autovacuum(engine: AsyncEngine) -> None:
    """For tests that write thousands of rows: an autovacuum worker still connected to the test's
    database when it is dropped makes `DROP DATABASE … (FORCE)` fail (it may not terminate it)."""
    async with engine.begin() as conn:
        await conn.execute(text("ALTER TABLE asset_events SET (autovacuum_enabled = false)"))


@pytest.fixture
def token(token_secret: str) -> str:
    return task_token(token_secret, "ingest", "run-1", "load")


@pytest.fixture
async def persister_process(infra: Settings, db_url: str, topics: Topics, token_secret: str,
                            tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[PersisterProcess]]]:
    """`await persister_process(*args)`: a started `assetbus run persister` in the test's group."""
    started: list[PersisterProcess] = []

    async def start(*args: str) -> PersisterProcess:
        log_dir = tmp_path / f"persister-{len(started)}"
        log_dir.mkdir()
        process = PersisterProcess(bootstrap=infra.bootstrap_servers, db_url=db_url, topics=topics,
                                   token_secret=token_secret, group_id=f"{topics.prefix}-persister",
                                   log_dir=log_dir, args=args)
        await process.start()
        started.append(process)
        return process

    yield start
    for process in started:
        await process.stop()
