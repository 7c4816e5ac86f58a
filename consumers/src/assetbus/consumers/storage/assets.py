"""Queries on registered assets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.tables import assets


@dataclass(frozen=True, slots=True)
class AssetRow:
    id: int
    name: str
    uri: str
    active: bool


_COLUMNS = (assets.c.id, assets.c.name, assets.c.uri, assets.c.active)


async def register_asset(conn: AsyncConnection, name: str, uri: str) -> AssetRow:
    """Register (or re-activate) an asset. Registering the same name and URI twice is a no-op."""
    stmt = (
        insert(assets)
        .values(name=name, uri=uri, active=True)
        .on_conflict_do_update(index_elements=[assets.c.name], set_={"active": True},
                               where=assets.c.uri == uri)
        .returning(*_COLUMNS)
    )
    try:
        row = (await conn.execute(stmt)).one_or_none()
    except sa_exc.IntegrityError as error:
        raise ValueError(f"URI {uri!r} is already registered for another asset") from error
    if row is None:
        raise ValueError(f"asset {name!r} is already registered with another URI")
    return AssetRow(*row)


async def assets_by_name(conn: AsyncConnection, names: Iterable[str]) -> dict[str, AssetRow]:
    """The registered assets among `names`, by name (inactive ones included)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    rows = await conn.execute(select(*_COLUMNS).where(assets.c.name.in_(wanted)))
    return {row.name: AssetRow(*row) for row in rows}


async def list_assets(conn: AsyncConnection) -> list[AssetRow]:
    rows = await conn.execute(select(*_COLUMNS).order_by(assets.c.name))
    return [AssetRow(*row) for row in rows]
