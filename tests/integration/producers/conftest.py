"""Emitter fixtures: a registered asset, a way to run code as a task, the process runtime cleaned up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import register_asset
from assetbus.producers import Asset, EmissionContext, shutdown, task_context
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.integration.producers.emitted import TaskContext


@pytest.fixture
async def orders(engine: AsyncEngine) -> Asset:
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
    return Asset("orders", "s3://bucket/orders/")


@pytest.fixture
async def running(persister: Persister) -> AsyncIterator[Persister]:
    """A persister, and the process's emitter runtime stopped after the test (it is per process)."""
    yield persister
    await asyncio.to_thread(shutdown)


@pytest.fixture
def as_task(infra: Settings, topics: Topics, running: Persister) -> TaskContext:
    """`with as_task(token):` runs the block as the task or callback that token names, on this test's topics."""

    def enter(token: str) -> AbstractContextManager[EmissionContext]:
        return task_context(token, bootstrap_servers=infra.bootstrap_servers, topic_prefix=topics.prefix,
                            receipt_timeout_s=20)

    return enter
