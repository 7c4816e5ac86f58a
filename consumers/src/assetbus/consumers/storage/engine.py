"""Engine creation (one async engine per service, asyncpg underneath), the start-up wait for it, its
connections and transactions whose driver errors come out translated (`consumers.faults`), and what the
database says about itself (`database_status`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.faults import translated
from assetbus.consumers.storage.urls import engine_url, host_list, wants_writes
from assetbus.producers.kafka.retry import RetryPolicy, RetryTimeout, retry_until
from assetbus.producers.kafka.startup import StartupTimeout

__all__ = ["DatabaseStatus", "autocommit", "create_engine", "database_status", "transaction", "wait_for_database"]


def create_engine(url: str, *, pool_size: int = 5, max_overflow: int = 2, pre_ping: bool = True) -> AsyncEngine:
    """An engine whose pool checks connections before use, so a restarted database heals.

    `pre_ping=False` saves that round trip per checkout (a quarter of a task-state request): the statement
    that meets a dead connection fails instead (a 503, a retried chunk) and SQLAlchemy invalidates the pool.
    A `url` naming several hosts with `target_session_attrs=read-write` (`storage.urls`) heals onto a promoted
    standby. `max_overflow` connections beyond `pool_size` are each a new connect (TCP, TLS, SCRAM).
    """
    return create_async_engine(engine_url(url), pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=pre_ping)


async def wait_for_database(engine: AsyncEngine, policy: RetryPolicy, log: logging.Logger) -> None:
    """Return once PostgreSQL answers `SELECT 1`; `StartupTimeout` (one line) when `policy` times out. A URL that
    asks for a host taking writes (`target_session_attrs=read-write`) waits while every host is a standby or
    away (a promotion may be under way); giving up, the line names the hosts tried."""

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
    """One transaction, committed on exit; failures to connect and transient faults raise StorageUnavailable:
    not being able to connect is never a fact about the data (the server is down, restarting, refusing
    connections to this database, or the credentials are wrong), so the caller backs off and retries."""
    async with _connected(engine) as conn, translated(), conn.begin():
        yield conn


@contextlib.asynccontextmanager
async def autocommit(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection without a transaction block, faults translated: each statement commits on its own, on return.
    For a caller whose write is one statement (atomic by itself): it saves the BEGIN and COMMIT round trips."""
    async with _connected(engine) as conn, translated():
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        yield conn


@dataclass(frozen=True, slots=True)
class DatabaseStatus:
    server_version: str
    now: datetime
    """The server's clock (`clock_timestamp()`, not the transaction's start)."""
    revisions: list[str]
    """Applied Alembic revisions (one, unless branches were merged); empty when never migrated."""
    active_dags: list[str]
    synchronous_standby_names: str = ""
    """Empty when commits wait for no standby."""
    standbys: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    """`pg_stat_replication`'s (application_name, state, sync_state) of each connected standby; state and
    sync_state are None for a role without `pg_read_all_stats` (`pg_monitor`)."""

    def synchronous_standbys(self) -> list[tuple[str, str, str]]:
        """The streaming standbys a commit waits for (sync_state `sync` or `quorum`)."""
        return [(name, state, sync) for name, state, sync in self.standbys
                if state == "streaming" and sync in ("sync", "quorum")]


async def database_status(conn: AsyncConnection) -> DatabaseStatus:
    version, now, has_alembic, has_dags, names = (await conn.execute(text(
        "SELECT current_setting('server_version'), clock_timestamp(), to_regclass('alembic_version') IS NOT NULL, "
        "to_regclass('consumer_dags') IS NOT NULL, current_setting('synchronous_standby_names')"))).one()
    revisions = list((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars()) \
        if has_alembic else []
    dags = list((await conn.execute(text("SELECT dag_id FROM consumer_dags WHERE active ORDER BY dag_id"))).scalars()) \
        if has_dags else []
    standbys = [(str(name or ""), state, sync) for name, state, sync in await conn.execute(
        text("SELECT application_name, state, sync_state FROM pg_stat_replication ORDER BY application_name"))]
    return DatabaseStatus(str(version), now, sorted(revisions), dags, str(names).strip(), standbys)
