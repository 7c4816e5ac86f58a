"""Asset state store: `/execution/store/asset/by-name/{value,clear}` and `/by-uri/…`, as Airflow 3.3.

Open only to task tokens whose task is registered with the asset as inlet or outlet
(`assetbus assets attach`); anyone else gets 403, whether or not the asset exists (Airflow leaves
this check as a TODO and answers 404 for an unknown asset; a 403 for both never tells a task which
assets exist). The seed's `/execution/state/asset/value?name=` and `/clear?name=` are deprecated
aliases of the by-name handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Response
from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.models import AssetStoreValueIn, StoreValueOut
from assetbus.consumers.api.preconditions import IfMatch, IfNoneMatch, parse_precondition
from assetbus.consumers.api.routes.common import (
    AssetName,
    AssetUri,
    QueryKey,
    check_value,
    key_not_found,
    no_content,
    value_response,
)
from assetbus.consumers.api.security import Caller, CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.state import (
    StateConflict,
    clear_asset_state,
    delete_asset_state,
    get_asset_state,
    get_registered_asset_state,
    set_registered_asset_state,
)
from assetbus.consumers.storage.task_assets import registered_asset_query

STORE_PREFIX = "/execution/store/asset"
ALIAS_PREFIX = "/execution/state/asset"

router = APIRouter(tags=["asset state store"], dependencies=[Depends(version_header)])


class _Asset:
    """An asset as a route names it: by name or by URI."""

    def __init__(self, *, name: str | None = None, uri: str | None = None) -> None:
        self.name, self.uri = name, uri

    def __str__(self) -> str:
        return f"name={self.name!r}" if self.name is not None else f"uri={self.uri!r}"

    def query(self, caller: Caller) -> Select[Any]:
        """The asset's id if the caller's task is registered with it (to embed in a state statement)."""
        ti = caller.task()
        return registered_asset_query(ti.dag_id, ti.task_id, self.name, uri=self.uri)

    def not_registered(self, caller: Caller) -> ApiError:
        ti = caller.task()
        return ApiError(403, ApiErrorCode.ASSET_NOT_REGISTERED,
                        f"task {ti.dag_id}.{ti.task_id} is not registered as inlet or outlet of the asset "
                        f"with {self} (`assetbus assets attach`)")

    async def id_for(self, conn: AsyncConnection, caller: Caller) -> int:
        """The asset's id, if the caller's task is registered with it; 403 otherwise."""
        found = (await conn.execute(self.query(caller))).scalar_one_or_none()
        if found is None:
            raise self.not_registered(caller)
        return int(found)


async def _get(asset: _Asset, key: str, caller: Caller, db: Db) -> Response:
    async with db.statement() as conn:
        registered, entry = await get_registered_asset_state(conn, asset.query(caller), key)
    if not registered:
        raise asset.not_registered(caller)
    if entry is None:
        raise key_not_found(f"Asset state store key {key!r} not found")
    return value_response(entry.value, entry.version)


async def _put(asset: _Asset, key: str, body: AssetStoreValueIn, caller: Caller, db: Db,
               if_match: str | None, if_none_match: str | None) -> Response:
    caller.task()
    when = parse_precondition(if_match, if_none_match)
    check_value(body.value)
    async with db.statement() as conn:
        entry = await set_registered_asset_state(conn, asset.query(caller), key, body.value, when)
        if entry is None:  # not registered (403), or the precondition failed (412): tell which
            raise StateConflict(key, await get_asset_state(conn, await asset.id_for(conn, caller), key))
    return no_content(version=entry.version)


async def _delete(asset: _Asset, key: str, caller: Caller, db: Db, if_match: str | None) -> Response:
    caller.task()
    when = parse_precondition(if_match)
    async with db.transaction() as conn:
        deleted = await delete_asset_state(conn, await asset.id_for(conn, caller), key, when)
    return no_content(deleted=int(deleted))


async def _clear(asset: _Asset, caller: Caller, db: Db) -> Response:
    async with db.transaction() as conn:
        deleted = await clear_asset_state(conn, await asset.id_for(conn, caller))
    return no_content(deleted=deleted)


def by_name(name: AssetName) -> _Asset:
    return _Asset(name=name)


def by_uri(uri: AssetUri) -> _Asset:
    return _Asset(uri=uri)


def _add_routes(prefix: str, locate: Callable[..., _Asset], by: str, *, deprecated: bool = False) -> None:
    """The four routes of an asset's state store under `prefix`, the asset named as `locate` reads it."""
    located = Depends(locate)

    async def get_value(*, asset: _Asset = located, key: QueryKey, caller: CurrentCaller, db: Db) -> Response:
        return await _get(asset, key, caller, db)

    async def put_value(*, asset: _Asset = located, key: QueryKey, body: AssetStoreValueIn, caller: CurrentCaller,
                        db: Db, if_match: IfMatch = None, if_none_match: IfNoneMatch = None) -> Response:
        return await _put(asset, key, body, caller, db, if_match, if_none_match)

    async def delete_value(*, asset: _Asset = located, key: QueryKey, caller: CurrentCaller, db: Db,
                           if_match: IfMatch = None) -> Response:
        return await _delete(asset, key, caller, db, if_match)

    async def clear(*, asset: _Asset = located, caller: CurrentCaller, db: Db) -> Response:
        return await _clear(asset, caller, db)

    what = f"an asset state store key by asset {by}"
    alias = " (deprecated alias of `/execution/store/asset/by-name/…`)" if deprecated else ""
    router.add_api_route(f"{prefix}/value", get_value, methods=["GET"], response_model=StoreValueOut,
                         deprecated=deprecated, responses=responses(403, 404, store=True),
                         summary=f"Get {what}{alias}")
    router.add_api_route(f"{prefix}/value", put_value, methods=["PUT"], status_code=204, response_class=Response,
                         deprecated=deprecated, responses=responses(403, 412, store=True),
                         summary=f"Set {what} (compare-and-set with If-Match / If-None-Match){alias}")
    router.add_api_route(f"{prefix}/value", delete_value, methods=["DELETE"], status_code=204,
                         response_class=Response, deprecated=deprecated, responses=responses(403, 412, store=True),
                         summary=f"Delete {what} (no-op if absent; compare-and-set with If-Match){alias}")
    router.add_api_route(f"{prefix}/clear", clear, methods=["DELETE"], status_code=204, response_class=Response,
                         deprecated=deprecated, responses=responses(403, store=True),
                         summary=f"Clear an asset's state store by asset {by}{alias}")


_add_routes(f"{STORE_PREFIX}/by-name", by_name, "name")
_add_routes(f"{STORE_PREFIX}/by-uri", by_uri, "URI")
_add_routes(ALIAS_PREFIX, by_name, "name", deprecated=True)
