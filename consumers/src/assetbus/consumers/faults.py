"""Translate driver errors into our exceptions, in this one place (below every layer of the services that
touches the database; the connection helpers that use it are in `storage.engine`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg
from sqlalchemy import exc as sa_exc

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


def _transient_sqlstate(error: BaseException | None) -> bool:
    code = getattr(error, "sqlstate", None)
    return isinstance(code, str) and (code in _TRANSIENT_SQLSTATES or code.startswith(_TRANSIENT_CLASSES))


def is_transient(error: BaseException) -> bool:
    """True for connection losses, shutdowns, lack of resources, serialization failures and deadlocks.

    A multi-host URL with `target_session_attrs=read-write` whose hosts all answer read-only
    (`TargetServerAttributeNotMatched`) is transient too: a standby's promotion may be under way. So is
    asyncpg's `InternalClientError` ("cannot switch to state 12; another operation is in progress"): a
    pooled connection whose last operation the loss of its server interrupted; the connection is dropped.

    Everything else (a constraint, a type, a value PostgreSQL refuses) is a fact about the data:
    retrying it cannot help.
    """
    if isinstance(error, (ConnectionError, OSError, asyncpg.exceptions.ConnectionDoesNotExistError,
                          asyncpg.exceptions.InterfaceError, asyncpg.exceptions.CannotConnectNowError,
                          asyncpg.exceptions.TargetServerAttributeNotMatched,
                          asyncpg.exceptions.InternalClientError)):
        return True
    if isinstance(error, asyncpg.PostgresError):
        return _transient_sqlstate(error)
    if isinstance(error, sa_exc.DBAPIError):
        if error.connection_invalidated:
            return True
        orig = error.orig
        cause = getattr(orig, "__cause__", None)
        if _transient_sqlstate(orig) or _transient_sqlstate(cause):
            return True
        return cause is not None and is_transient(cause)
    return isinstance(error, (sa_exc.TimeoutError, TimeoutError))


def storage_unavailable(error: BaseException) -> bool:
    """The `retriable` test of a retry that waits out the database (`retry_until`): a translated fault."""
    return isinstance(error, StorageUnavailable)


@contextlib.asynccontextmanager
async def translated() -> AsyncIterator[None]:
    """Re-raise transient driver errors as StorageUnavailable (retriable)."""
    try:
        yield
    except Exception as error:
        if is_transient(error):
            raise StorageUnavailable(f"database unavailable: {type(error).__name__}: {error}") from error
        raise
