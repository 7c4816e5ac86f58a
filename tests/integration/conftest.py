"""Integration fixtures: a running persister on the test's own database and topics."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.settings import Settings
from consumers.persister import Persister, PersisterConfig
from consumers.storage import create_engine
from schemas import Topics


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(db_url)
    yield engine
    await engine.dispose()


@pytest.fixture
def persister_config(infra: Settings, db_url: str, topics: Topics, token_secret: str) -> PersisterConfig:
    return PersisterConfig(bootstrap_servers=infra.bootstrap_servers, database_url=db_url,
                           token_secret=token_secret, topics=topics, group_id=f"{topics.prefix}-persister",
                           batch_timeout_ms=20)


@pytest.fixture
async def persister(persister_config: PersisterConfig) -> AsyncIterator[Persister]:
    async with Persister(persister_config) as running:
        yield running
