"""Reading back what the emitter tests stored (shared by the emitter integration tests)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage.tables import asset_events, assets
from assetbus.producers import EmissionContext

TaskContext = Callable[[str], AbstractContextManager[EmissionContext]]


async def stored_events(engine: AsyncEngine) -> list[dict[str, Any]]:
    """Every stored event with its asset name, in storage order."""
    query = (select(asset_events, assets.c.name.label("asset_name"))
             .join(assets, assets.c.id == asset_events.c.asset_id).order_by(asset_events.c.id))
    async with engine.connect() as conn:
        return [dict(row._mapping) for row in await conn.execute(query)]
