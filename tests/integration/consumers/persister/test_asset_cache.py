"""The persister's asset cache: active assets are read once, unknown names every time."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.persister import batch
from assetbus.consumers.persister.batch import AssetCache
from assetbus.consumers.storage import AssetRow, assets_by_name, register_asset


async def test_active_assets_are_read_once_and_a_name_registered_later_is_found_at_once(
        engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    async with engine.begin() as conn:
        orders = await register_asset(conn, "orders", "s3://bucket/orders/")
    lookups: list[list[str]] = []

    async def counted(conn: AsyncConnection, names: Iterable[str]) -> dict[str, AssetRow]:
        lookups.append(list(names))
        return await assets_by_name(conn, lookups[-1])

    monkeypatch.setattr(batch, "assets_by_name", counted)
    cache = AssetCache()
    async with engine.connect() as conn:
        first = await cache.get(conn, {"orders", "later"})
        assert first == {"orders": orders}
        assert len(lookups) == 1
        assert await cache.get(conn, {"orders"}) == {"orders": orders}
        assert len(lookups) == 1, "an active asset is not looked up again"
    async with engine.begin() as conn:
        later = await register_asset(conn, "later", "s3://bucket/later/")
    async with engine.connect() as conn:
        assert await cache.get(conn, {"orders", "later"}) == {"orders": orders, "later": later}
        assert len(lookups) == 2, "a name not found before is looked up again"
