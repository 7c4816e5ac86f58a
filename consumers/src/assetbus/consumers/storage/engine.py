"""Engine creation (one async engine per service, asyncpg underneath) and the start-up wait for it."""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.storage.faults import translated
from assetbus.consumers.storage.urls import engine_url, host_list, wants_writes
from assetbus.producers.kafka.retry import RetryPolicy, RetryTimeout, retry_until
from assetbus.producers.kafka.startup import StartupTimeout

__all__ = ["create_engine", "wait_for_database"]


def create_engine(url: str, *, pool_size: int = 5, max_overflow: int = 2, pre_ping: bool = True) -> AsyncEngine:
    """An engine whose pool checks connections before use, so a restarted database heals.

    `pre_ping=False` saves that round trip on every checkout (the API, where it was a quarter of a
    task-state request; the persister, one of five round trips per chunk): a restarted database then
    fails the statement that meets a dead connection (the API answers 503 `storage_unavailable`, the
    persister retries the chunk), SQLAlchemy invalidates the pool on that disconnect, and the next
    checkout gets a fresh connection.

    `url` may name several hosts (`storage.urls`): with `target_session_attrs=read-write` each new
    connection goes to the one that takes writes, so after a standby's promotion the pool heals onto it.

    `max_overflow` connections are opened beyond `pool_size` under a peak and closed when returned:
    each is a new connect (TCP, TLS, SCRAM). The API uses 0, so a burst waits for a pooled connection.
    """
    return create_async_engine(engine_url(url), pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=pre_ping)


async def wait_for_database(engine: AsyncEngine, policy: RetryPolicy, log: logging.Logger) -> None:
    """Return once PostgreSQL answers `SELECT 1`; `StartupTimeout` (one line) when `policy` times out.

    A URL that asks for a host taking writes (`target_session_attrs=read-write`) waits while every host
    is a standby or away (a promotion may be under way); giving up, the line names the hosts tried.
    """

    async def probe() -> None:
        async with translated(), engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    url = engine.url.render_as_string(hide_password=True)
    writes = wants_writes(url)
    hosts = ", ".join(host_list(engine.url.render_as_string(hide_password=False)))
    where = f"a writable PostgreSQL among {hosts}" if writes else f"PostgreSQL at {url}"
    try:
        await retry_until(probe, policy, what=where,
                          retriable=lambda error: isinstance(error, StorageUnavailable | OSError | TimeoutError),
                          log=log)
    except RetryTimeout as error:
        if writes:
            raise StartupTimeout(f"PostgreSQL: none of the hosts tried ({hosts}) accepts writes after "
                                 f"{error.waited_s:.0f}s: each is a read-only standby or unreachable "
                                 "(check DATABASE_URL, or whether a promotion is under way)") from error
        raise StartupTimeout(f"PostgreSQL at {url} is unreachable after {error.waited_s:.0f}s "
                             "(check DATABASE_URL)") from error
