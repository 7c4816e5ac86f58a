"""The routes' access to PostgreSQL: one transaction per request, driver faults → 503."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.storage import translated


class Database:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A transaction that commits when the block ends; transient driver errors become StorageUnavailable."""
        async with translated(), self.engine.begin() as conn:
            yield conn


async def database_of(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


Db = Annotated[Database, Depends(database_of)]
