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

    `pre_ping=False` saves that round trip per checkout (a quarter of a task-state request): the statement
    that meets a dead connection fails instead (a 503, a retried chunk) and SQLAlchemy invalidates the pool.
    A `url` naming several hosts with `target_session_attrs=read-write` (`storage.urls`) heals onto a promoted
    standby. `max_overflow` connections beyond `pool_size` are each a new connect (TCP, TLS, SCRAM).
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
