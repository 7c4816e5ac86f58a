"""Asset state store: `/execution/store/asset/by-name/{value,clear}` and `/by-uri/…`, as Airflow 3.3, and the
seed's deprecated `/execution/state/asset/…?name=` aliases. Open only to task tokens whose task is attached to the
asset; anyone else gets 403, whether or not the asset exists (docs/state.md, "Security").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import asyncpg
from fastapi import APIRouter, Depends, Response

from assetbus.consumers.api.database import Database, Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode
from assetbus.consumers.api.models import AssetStoreValueIn
from assetbus.consumers.api.routes.common import (
    AssetName,
    AssetUri,
    IfMatch,
    IfNoneMatch,
    QueryKey,
    add_store_routes,
    check_value,
    no_content,
    parse_precondition,
    stored_value_response,
)
from assetbus.consumers.api.security import Caller, CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.state import (
    AssetNotRegistered,
    AssetRef,
    clear_asset,
    delete_asset_value,
    get_asset_value,
    set_asset_value,
)

STORE_PREFIX = "/execution/store/asset"
ALIAS_PREFIX = "/execution/state/asset"

router = APIRouter(tags=["asset state store"], dependencies=[Depends(version_header)])


@dataclass(frozen=True)
class _Asset:
    """An asset as a route names it: by "name" or by "uri"."""

    by: str
    value: str

    @contextlib.asynccontextmanager
    async def registered(self, caller: Caller, db: Database) -> AsyncIterator[tuple[asyncpg.Connection, AssetRef]]:
        """A connection and the asset as the caller's task asks for it (403 `not_a_task_token` for other tokens);
        AssetNotRegistered in the block becomes the 403."""
        ti = caller.task()
        ref = AssetRef(self.by, self.value, ti.dag_id, ti.task_id)
        try:
            async with db.raw() as conn:
                yield conn, ref
        except AssetNotRegistered:
            raise ApiError(403, ApiErrorCode.ASSET_NOT_REGISTERED,
                           f"task {ref.dag_id}.{ref.task_id} is not registered as inlet or outlet of the asset "
                           f"with {self.by}={self.value!r} (`assetbus assets attach`)") from None


def by_name(name: AssetName) -> _Asset:
    return _Asset("name", name)


def by_uri(uri: AssetUri) -> _Asset:
    return _Asset("uri", uri)


def _add_routes(prefix: str, locate: Callable[..., _Asset], by: str, alias: str = "") -> None:
    """The four routes of an asset's state store under `prefix`, the asset named as `locate` reads it."""
    located = Depends(locate)

    async def get_value(*, asset: _Asset = located, key: QueryKey, caller: CurrentCaller, db: Db) -> Response:
        async with asset.registered(caller, db) as (conn, ref):
            found = await get_asset_value(conn, ref, key)
        if found is None:
            raise ApiError(404, ApiErrorCode.NOT_FOUND, f"Asset state store key {key!r} not found")
        return stored_value_response(found)

    async def put_value(*, asset: _Asset = located, key: QueryKey, body: AssetStoreValueIn, caller: CurrentCaller,
                        db: Db, if_match: IfMatch = None, if_none_match: IfNoneMatch = None) -> Response:
        caller.task()
        when = parse_precondition(if_match, if_none_match)
        value_json = check_value(body.value)
        async with asset.registered(caller, db) as (conn, ref):
            version = await set_asset_value(conn, ref, key, value_json, when)
        return no_content(version=version)

    async def delete_value(*, asset: _Asset = located, key: QueryKey, caller: CurrentCaller, db: Db,
                           if_match: IfMatch = None) -> Response:
        caller.task()
        when = parse_precondition(if_match)
        async with asset.registered(caller, db) as (conn, ref):
            deleted = await delete_asset_value(conn, ref, key, when)
        return no_content(deleted=int(deleted))

    async def clear(*, asset: _Asset = located, caller: CurrentCaller, db: Db) -> Response:
        async with asset.registered(caller, db) as (conn, ref):
            deleted = await clear_asset(conn, ref)
        return no_content(deleted=deleted)

    add_store_routes(router, f"{prefix}/value", f"{prefix}/clear", (get_value, put_value, delete_value, clear),
                     key=f"an asset state store key by asset {by}", clear=f"Clear an asset's state store by asset {by}",
                     alias=alias)


_add_routes(f"{STORE_PREFIX}/by-name", by_name, "name")
_add_routes(f"{STORE_PREFIX}/by-uri", by_uri, "URI")
_add_routes(ALIAS_PREFIX, by_name, "name", " (deprecated alias of `/execution/store/asset/by-name/…`)")
