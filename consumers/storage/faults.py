"""Translate driver errors into our exceptions, in this one place."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg
from sqlalchemy import exc as sa_exc

from consumers.errors import StorageUnavailable

_TRANSIENT_SQLSTATES = {"57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004", "40001", "40P01"}


def is_transient(error: BaseException) -> bool:
    """True for connection losses, shutdowns, serialization failures and deadlocks."""
    if isinstance(error, (ConnectionError, OSError, asyncpg.exceptions.ConnectionDoesNotExistError,
                          asyncpg.exceptions.InterfaceError)):
        return True
    if isinstance(error, sa_exc.DBAPIError):
        if error.connection_invalidated:
            return True
        orig = error.orig
        code = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "__cause__", None), "sqlstate", None)
        if code in _TRANSIENT_SQLSTATES:
            return True
        cause = getattr(orig, "__cause__", None)
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
