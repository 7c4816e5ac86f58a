"""What the migration tests share: an empty database (no migration applied) and its asyncpg DSN."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import make_url

from assetbus.settings import Settings
from tests.conftest import fresh_database


@pytest.fixture
async def empty_db(infra: Settings) -> AsyncIterator[str]:
    async for url in fresh_database(infra.database_url, None):
        yield url


def plain_dsn(url: str) -> str:
    """The SQLAlchemy URL as a DSN for asyncpg."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
