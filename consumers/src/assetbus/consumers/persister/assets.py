"""The persister's view of the asset registry: active assets cached, unknown names asked every time.

A registered asset never changes: registering its name again with another URI is refused, and
nothing deactivates an asset. So an active (name, id, URI) row, once read, is still true, and the
persister need not ask PostgreSQL for it on every chunk (a round trip per transaction). A name not
found, or found inactive, is not cached: it is looked up again on the next chunk that uses it, so an
asset registered a moment ago is matched at once. If asset deactivation is ever added, this cache
must learn of it (or be dropped).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage import AssetRow, assets_by_name

MAX_CACHED = 100_000
"""More assets than this and the cache starts again from empty (memory stays bounded)."""


class AssetCache:
    def __init__(self) -> None:
        self._active: dict[str, AssetRow] = {}

    async def get(self, conn: AsyncConnection, names: Iterable[str]) -> dict[str, AssetRow]:
        """The registered assets among `names`, by name (as `assets_by_name`)."""
        cached = self._active
        found: dict[str, AssetRow] = {}
        missing: list[str] = []
        for name in names:
            row = cached.get(name)
            if row is None:
                missing.append(name)
            else:
                found[name] = row
        if missing:
            fresh = await assets_by_name(conn, missing)
            if len(cached) + len(fresh) > MAX_CACHED:
                cached.clear()
            found.update(fresh)
            cached.update((name, row) for name, row in fresh.items() if row.active)
        return found
