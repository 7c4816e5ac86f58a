"""Translate driver errors into our exceptions, in this one place."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.errors import StorageUnavailable

_TRANSIENT_SQLSTATES = {
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "25006",  # read_only_sql_transaction: a fail-over left us on a standby for a moment
    "55P03",  # lock_not_available
    "57014",  # query_canceled (statement timeout, pg_cancel_backend)
    "57P01", "57P02", "57P03",  # admin shutdown (pg_terminate_backend), crash shutdown, cannot connect now
}
_TRANSIENT_CLASSES = ("08", "53")
"""Connection exceptions; insufficient resources (disk full, out of memory, too many connections)."""


def _sqlstate(error: BaseException | None) -> str | None:
    code = getattr(error, "sqlstate", None)
    return code if isinstance(code, str) else None


def _transient_code(code: str | None) -> bool:
    return code is not None and (code in _TRANSIENT_SQLSTATES or code.startswith(_TRANSIENT_CLASSES))


def is_transient(error: BaseException) -> bool:
    """True for connection losses, shutdowns, lack of resources, serialization failures and deadlocks.

    Everything else (a constraint, a type, a value PostgreSQL refuses) is a fact about the data:
    retrying it cannot help.
    """
    if isinstance(error, (ConnectionError, OSError, asyncpg.exceptions.ConnectionDoesNotExistError,
                          asyncpg.exceptions.InterfaceError, asyncpg.exceptions.CannotConnectNowError)):
        return True
    if isinstance(error, asyncpg.PostgresError):
        return _transient_code(_sqlstate(error))
    if isinstance(error, sa_exc.DBAPIError):
        if error.connection_invalidated:
            return True
        orig = error.orig
        cause = getattr(orig, "__cause__", None)
        if _transient_code(_sqlstate(orig)) or _transient_code(_sqlstate(cause)):
            return True
        return cause is not None and is_transient(cause)
    return isinstance(error, (sa_exc.TimeoutError, TimeoutError))


@contextlib.asynccontextmanager
async def translated() -> AsyncIterator[None]:
    """Re-raise transient driver errors as StorageUnavailable (retriable)."""
    try:
        yield
    except Exception as error:
        if is_transient(error):
            raise StorageUnavailable(f"database unavailable: {type(error).__name__}: {error}") from error
        raise


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
