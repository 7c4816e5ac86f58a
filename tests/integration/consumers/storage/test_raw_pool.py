"""The plain asyncpg pool: a connection a transient fault interrupted is never handed out again."""

from __future__ import annotations

import asyncpg
import pytest

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.storage.raw_pool import create_raw_pool, raw_connection


async def test_a_connection_interrupted_by_a_transient_fault_is_replaced_and_one_refused_by_the_data_kept(
        db_url: str) -> None:
    pool = await create_raw_pool(db_url, size=1)
    try:
        async with raw_connection(pool) as conn:
            first = await conn.fetchval("select pg_backend_pid()")
        with pytest.raises(StorageUnavailable):
            async with raw_connection(pool) as conn:
                # what a pooled connection raises when the loss of its server interrupted its last operation
                raise asyncpg.exceptions.InternalClientError("cannot switch to state 12; another operation (2) is "
                                                             "in progress")
        async with raw_connection(pool) as conn:
            second = await conn.fetchval("select pg_backend_pid()")
        assert second != first  # a new connection: the interrupted one was terminated, not reused
        with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
            async with raw_connection(pool) as conn:
                await conn.fetchval("select 1 / 0")
        async with raw_connection(pool) as conn:
            assert await conn.fetchval("select pg_backend_pid()") == second  # a fact about the data: kept
    finally:
        await pool.close()
