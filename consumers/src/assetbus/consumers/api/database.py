"""The routes' access to PostgreSQL: one transaction per request, driver faults → 503.

`transaction()` costs two round trips besides the statements (BEGIN, COMMIT); a request that runs
ONE statement can use `statement()` instead, where that statement commits on its own: same
atomicity, a third of the round trips of a one-row read.
"""

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
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")  # same pool

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A transaction that commits when the block ends; transient driver errors become StorageUnavailable."""
        async with translated(), self.engine.begin() as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def statement(self) -> AsyncIterator[AsyncConnection]:
        """A connection for a single statement, which commits by itself (no BEGIN and COMMIT round trips).

        Only for a block that runs one statement: two statements here are two transactions.
        """
        async with translated(), self._autocommit.connect() as conn:
            yield conn


async def database_of(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


Db = Annotated[Database, Depends(database_of)]
