"""Engine creation: one async engine per service, asyncpg underneath."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def create_engine(url: str, *, pool_size: int = 5, max_overflow: int = 2, pre_ping: bool = True) -> AsyncEngine:
    """An engine whose pool checks connections before use, so a restarted database heals.

    `pre_ping=False` saves that round trip on every checkout (the API, where it was a quarter of a
    task-state request; the persister, one of five round trips per chunk): a restarted database then
    fails the statement that meets a dead connection (the API answers 503 `storage_unavailable`, the
    persister retries the chunk), SQLAlchemy invalidates the pool on that disconnect, and the next
    checkout gets a fresh connection.

    `max_overflow` connections are opened beyond `pool_size` under a peak and closed when returned:
    each is a new connect (TCP, TLS, SCRAM). The API uses 0, so a burst waits for a pooled connection.
    """
    return create_async_engine(url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=pre_ping)
