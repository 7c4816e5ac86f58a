"""Which database errors are worth a retry: connection and resource faults yes, facts about the data no."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import exc as sa_exc

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.faults import is_transient, translated


def wrapped(error: BaseException, *, invalidated: bool = False) -> sa_exc.DBAPIError:
    """How SQLAlchemy's asyncpg dialect hands a driver error up: an adapted error caused by the driver's."""

    class AdaptedError(Exception):
        pass

    adapted = AdaptedError(str(error))
    adapted.__cause__ = error
    return sa_exc.DBAPIError("INSERT …", None, adapted, connection_invalidated=invalidated)


@pytest.mark.parametrize("error", [
    asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command"),
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
    asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    asyncpg.exceptions.SerializationError("could not serialize access"),
    asyncpg.exceptions.DeadlockDetectedError("deadlock detected"),
    asyncpg.exceptions.DiskFullError("could not extend file"),
    asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
    asyncpg.exceptions.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"),
    ConnectionRefusedError(111, "Connection refused"),
    asyncpg.exceptions.TargetServerAttributeNotMatched("None of the hosts match the target attribute requirement"),
    asyncpg.exceptions.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
])
def test_connection_and_resource_faults_are_transient_raw_or_wrapped(error: BaseException) -> None:
    assert is_transient(error)
    assert is_transient(wrapped(error))


@pytest.mark.parametrize("error", [
    asyncpg.exceptions.UniqueViolationError("duplicate key value"),
    asyncpg.exceptions.InvalidTextRepresentationError("invalid input syntax for type json"),
    asyncpg.exceptions.NumericValueOutOfRangeError("value out of range"),
    asyncpg.exceptions.UntranslatableCharacterError("unsupported Unicode escape sequence"),
])
def test_facts_about_the_data_are_not_transient(error: BaseException) -> None:
    assert not is_transient(error)
    assert not is_transient(wrapped(error))


def test_an_invalidated_connection_is_transient_whatever_the_error() -> None:
    assert is_transient(wrapped(ValueError("?"), invalidated=True))


async def test_translated_raises_storage_unavailable_only_for_transient_faults() -> None:
    with pytest.raises(StorageUnavailable) as raised:
        async with translated():
            raise wrapped(asyncpg.exceptions.AdminShutdownError("terminating connection"))
    assert raised.value.retriable
    with pytest.raises(sa_exc.DBAPIError):
        async with translated():
            raise wrapped(asyncpg.exceptions.UniqueViolationError("duplicate key value"))
