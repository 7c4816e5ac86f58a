"""Scratch databases for the benchmarks: created and migrated for one run, dropped after it."""

from __future__ import annotations

import asyncpg
from sqlalchemy.engine import make_url

from assetbus.migrate import upgrade_async


async def create_database(admin_url: str, name: str) -> str:
    """Create database `name` on the server of `admin_url`, migrate it, and return its URL."""
    await _admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    await upgrade_async(url)
    return url


async def drop_database(admin_url: str, name: str) -> None:
    await _admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _admin_execute(admin_url: str, statement: str) -> None:
    plain = make_url(admin_url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(plain)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()
