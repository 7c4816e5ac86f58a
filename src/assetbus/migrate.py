"""Apply Alembic migrations programmatically (`assetbus migrate`, tests, demo)."""

from __future__ import annotations

import asyncio

from alembic import command
from alembic.config import Config

from assetbus.consumers.storage.urls import engine_url
from assetbus.migrations import MIGRATIONS_DIR


def alembic_config(db_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", engine_url(db_url).replace("%", "%%"))
    return config


def upgrade(db_url: str, revision: str = "head") -> None:
    """Bring the database at `db_url` to `revision`. Safe to run again (a no-op at head)."""
    command.upgrade(alembic_config(db_url), revision)


async def upgrade_async(db_url: str, revision: str = "head") -> None:
    """Same, from async code (Alembic's env runs its own event loop, so use a thread)."""
    await asyncio.to_thread(upgrade, db_url, revision)
