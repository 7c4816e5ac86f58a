"""Engine creation: one async engine per service, asyncpg underneath."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def create_engine(url: str, *, pool_size: int = 5, pre_ping: bool = True) -> AsyncEngine:
    """An engine whose pool checks connections before use, so a restarted database heals.

    `pre_ping=False` saves that check's round trip on every checkout, for a caller that retries a
    transaction whose connection turns out dead (a dead connection is invalidated on first use and
    its error is transient): the persister's hot path.
    """
    return create_async_engine(url, pool_size=pool_size, max_overflow=2, pool_pre_ping=pre_ping)
