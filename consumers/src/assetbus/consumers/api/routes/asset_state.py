"""Asset state: `/execution/state/asset/value?name=&key=` and `/execution/state/asset/clear?name=`.

Open only to task tokens whose task is registered with the asset as inlet or outlet
(`assetbus assets attach`); anyone else gets 403, whether or not the asset exists.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.models import ClearedOut, StateEntryOut, StateValueIn
from assetbus.consumers.api.preconditions import IfMatch, IfNoneMatch, parse_precondition
from assetbus.consumers.api.routes.common import AssetName, QueryKey, check_value_size, entry_response, key_not_found
from assetbus.consumers.api.security import Caller, CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.state import clear_asset_state, delete_asset_state, get_asset_state, set_asset_state
from assetbus.consumers.storage.task_assets import registered_asset_id

router = APIRouter(prefix="/execution/state/asset", tags=["asset state"], dependencies=[Depends(version_header)])


async def _asset_of(conn: AsyncConnection, caller: Caller, name: str) -> int:
    """The asset's id, if the caller's task is registered with it; 403 otherwise."""
    ti = caller.task()
    asset_id = await registered_asset_id(conn, ti.dag_id, ti.task_id, name)
    if asset_id is None:
        raise ApiError(403, ApiErrorCode.ASSET_NOT_REGISTERED,
                       f"task {ti.dag_id}.{ti.task_id} is not registered as inlet or outlet of asset {name!r} "
                       "(`assetbus assets attach`)")
    return asset_id


@router.get("/value", response_model=StateEntryOut, responses=responses(403, 404), summary="Read a key of an asset")
async def get_value(name: AssetName, key: QueryKey, caller: CurrentCaller, db: Db,
                    response: Response) -> StateEntryOut:
    async with db.transaction() as conn:
        entry = await get_asset_state(conn, await _asset_of(conn, caller, name), key)
    if entry is None:
        raise key_not_found(f"asset {name!r} has no state under key {key!r}")
    return entry_response(entry, response)


@router.put("/value", response_model=StateEntryOut, responses=responses(403, 412),
            summary="Write a key of an asset (compare-and-set with If-Match / If-None-Match)")
async def put_value(name: AssetName, key: QueryKey, body: StateValueIn, caller: CurrentCaller, db: Db,
                    response: Response, if_match: IfMatch = None, if_none_match: IfNoneMatch = None) -> StateEntryOut:
    caller.task()
    when = parse_precondition(if_match, if_none_match)
    check_value_size(body.value)
    async with db.transaction() as conn:
        entry = await set_asset_state(conn, await _asset_of(conn, caller, name), key, body.value, when)
    return entry_response(entry, response)


@router.delete("/value", status_code=204, response_class=Response, responses=responses(403, 404, 412),
               summary="Delete a key of an asset (compare-and-set with If-Match)")
async def delete_value(name: AssetName, key: QueryKey, caller: CurrentCaller, db: Db,
                       if_match: IfMatch = None) -> Response:
    caller.task()
    when = parse_precondition(if_match)
    async with db.transaction() as conn:
        deleted = await delete_asset_state(conn, await _asset_of(conn, caller, name), key, when)
    if not deleted:
        raise key_not_found(f"asset {name!r} has no state under key {key!r}")
    return Response(status_code=204)


@router.delete("/clear", response_model=ClearedOut, responses=responses(403), summary="Clear an asset's state")
async def clear(name: AssetName, caller: CurrentCaller, db: Db) -> ClearedOut:
    async with db.transaction() as conn:
        deleted = await clear_asset_state(conn, await _asset_of(conn, caller, name))
    return ClearedOut(deleted=deleted)
