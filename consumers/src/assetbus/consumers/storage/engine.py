"""Engine creation: one async engine per service, asyncpg underneath."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def create_engine(url: str, *, pool_size: int = 5) -> AsyncEngine:
    """An engine whose pool checks connections before use, so a restarted database heals."""
    return create_async_engine(url, pool_size=pool_size, max_overflow=2, pool_pre_ping=True)
