"""Connections and transactions whose driver errors come out translated (`consumers.faults`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.faults import is_transient, translated

__all__ = ["autocommit", "is_transient", "transaction", "translated"]


@contextlib.asynccontextmanager
async def _connected(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A pooled connection, closed on exit; not connecting raises StorageUnavailable, and a connection
    whose block raised StorageUnavailable is kept out of the pool: it may be dead (an engine without
    pre-ping would otherwise hand it out again, and fail again, after the database is back)."""
    try:
        conn = await engine.connect()
    except Exception as error:
        raise StorageUnavailable(f"cannot connect to the database: {type(error).__name__}: {error}") from error
    try:
        yield conn
    except StorageUnavailable:
        with contextlib.suppress(Exception):
            await conn.invalidate()
        raise
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


@contextlib.asynccontextmanager
async def transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One transaction, committed on exit; failures to connect and transient faults raise StorageUnavailable.

    Not being able to connect is never a fact about the data (the server is down, restarting, refusing
    connections to this database, or the credentials are wrong), so the caller backs off and retries.
    """
    async with _connected(engine) as conn, translated(), conn.begin():
        yield conn


@contextlib.asynccontextmanager
async def autocommit(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection without a transaction block: each statement commits on its own, on return.

    For a caller whose write is one statement (atomic by itself): it saves the BEGIN and COMMIT
    round trips. Faults are translated as in `transaction`.
    """
    async with _connected(engine) as conn, translated():
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        yield conn
