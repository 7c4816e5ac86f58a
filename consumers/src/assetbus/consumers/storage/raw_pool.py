"""A plain asyncpg pool beside a service's SQLAlchemy engine, for statements on a hot request path.

asyncpg's statement cache prepares each SQL text once per connection, so a request costs one round trip and
no compilation (SQLAlchemy's per-statement compile, greenlet and row wrapping are most of the database CPU of
a one-row request). Connections are released without asyncpg's reset query (a round trip each): the
statements here are single autocommit statements that leave no session state behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from assetbus.consumers.faults import is_transient, translated
from assetbus.consumers.storage.urls import engine_url

_SQLALCHEMY_ONLY = ("prepared_statement_cache_size", "prepared_statement_name_func", "async_fallback")
"""Connect arguments SQLAlchemy's asyncpg dialect reads from the URL itself (asyncpg would refuse them)."""


def connect_arguments(database_url: str) -> dict[str, Any]:
    """The `asyncpg.connect` keywords of a SQLAlchemy URL (`postgresql+asyncpg://…?ssl=require`), as the
    engine would connect (the dialect's own translation: host, port, user, password, database, ssl, …)."""
    # The engine's driver whatever the URL says; a libpq host list becomes the dialect's `host=h:p` parameters.
    url = make_url(engine_url(database_url)).set(drivername="postgresql+asyncpg")
    _, kwargs = url.get_dialect()().create_connect_args(url)
    return {name: value for name, value in kwargs.items() if name not in _SQLALCHEMY_ONLY}


async def _no_reset(conn: asyncpg.Connection) -> None:
    """Release without the reset query (see the module docstring)."""


async def create_raw_pool(database_url: str, *, size: int) -> asyncpg.Pool:
    """`size` connections, opened now (a refused connect raises, translated by `raw_connection` callers'
    `translated()`: the services wait for the database before creating it)."""
    async with translated():
        pool: asyncpg.Pool = await asyncpg.create_pool(**connect_arguments(database_url), min_size=size,
                                                      max_size=size, reset=_no_reset)
    return pool


@contextlib.asynccontextmanager
async def raw_connection(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection; transient driver errors (connect, connection lost, shutdown) become
    StorageUnavailable. A connection that died, or whose operation such a fault interrupted, is terminated
    before its release (the pool opens a new one): asyncpg would otherwise hand it out again mid-operation."""
    async with translated(), pool.acquire() as conn:
        try:
            yield conn
        except Exception as error:
            if is_transient(error):
                conn.terminate()
            raise
