"""The routes' access to PostgreSQL: one transaction (or one autocommit statement) per request, driver faults → 503.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

import asyncpg
from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.storage import translated
from assetbus.consumers.storage.raw_pool import raw_connection


class Database:
    def __init__(self, engine: AsyncEngine, raw_pool: asyncpg.Pool) -> None:
        self.engine = engine
        self.raw_pool = raw_pool
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")  # same pool

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A transaction that commits when the block ends; transient driver errors become StorageUnavailable."""
        async with translated(), self.engine.begin() as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def statement(self) -> AsyncIterator[AsyncConnection]:
        """A connection for a single statement, which commits by itself (no BEGIN and COMMIT round trips): two
        statements here are two transactions."""
        async with translated(), self._autocommit.connect() as conn:
            yield conn

    def raw(self) -> contextlib.AbstractAsyncContextManager[asyncpg.Connection]:
        """An asyncpg connection for single autocommit statements (`raw_pool.raw_connection`)."""
        return raw_connection(self.raw_pool)


def app_state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A dependency that reads `request.app.state.<name>` (set by `create_api` and its lifespan)."""

    async def read(request: Request) -> Any:
        return getattr(request.app.state, name)

    return read


Db = Annotated[Database, Depends(app_state("database"))]
