"""Task state: `/execution/state/ti/{ti_id}/{key}` and the clear of a task instance.

A task token touches only its own `ti_id` (derived from its claims); single-key operations never
cross mapped siblings; clearing every map index of the task is an explicit opt-in.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Response

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import responses
from assetbus.consumers.api.models import ClearedOut, StateEntryOut, StateValueIn
from assetbus.consumers.api.preconditions import IfMatch, IfNoneMatch, parse_precondition
from assetbus.consumers.api.routes.common import PathKey, check_value_size, entry_response, key_not_found
from assetbus.consumers.api.security import CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.state import (
    clear_task_state,
    delete_task_state,
    get_task_state,
    set_task_state,
)

router = APIRouter(prefix="/execution/state/ti", tags=["task state"], dependencies=[Depends(version_header)])
TiId = Annotated[UUID, Path(description="The task instance id, `schemas.task_instance_id(dag_id, run_id, task_id, "
                                        "map_index)`; it must be the token's own.")]


@router.get("/{ti_id}/{key}", response_model=StateEntryOut, responses=responses(403, 404),
            summary="Read a key of the caller's task instance")
async def get_value(ti_id: TiId, key: PathKey, caller: CurrentCaller, db: Db, response: Response) -> StateEntryOut:
    ti = caller.task_instance(ti_id)
    async with db.transaction() as conn:
        entry = await get_task_state(conn, ti, key)
    if entry is None:
        raise key_not_found(f"task instance {ti_id} has no state under key {key!r}")
    return entry_response(entry, response)


@router.put("/{ti_id}/{key}", response_model=StateEntryOut, responses=responses(403, 412),
            summary="Write a key (compare-and-set with If-Match / If-None-Match)")
async def put_value(ti_id: TiId, key: PathKey, body: StateValueIn, caller: CurrentCaller, db: Db,
                    response: Response, if_match: IfMatch = None, if_none_match: IfNoneMatch = None) -> StateEntryOut:
    ti = caller.task_instance(ti_id)
    when = parse_precondition(if_match, if_none_match)
    check_value_size(body.value)
    async with db.transaction() as conn:
        entry = await set_task_state(conn, ti, key, body.value, when)
    return entry_response(entry, response)


@router.delete("/{ti_id}/{key}", status_code=204, response_class=Response, responses=responses(403, 404, 412),
               summary="Delete a key (compare-and-set with If-Match)")
async def delete_value(ti_id: TiId, key: PathKey, caller: CurrentCaller, db: Db,
                       if_match: IfMatch = None) -> Response:
    ti = caller.task_instance(ti_id)
    when = parse_precondition(if_match)
    async with db.transaction() as conn:
        deleted = await delete_task_state(conn, ti, key, when)
    if not deleted:
        raise key_not_found(f"task instance {ti_id} has no state under key {key!r}")
    return Response(status_code=204)


@router.delete("/{ti_id}", response_model=ClearedOut, responses=responses(403),
               summary="Clear the task instance's state (or, opted in, every map index of its task)")
async def clear(ti_id: TiId, caller: CurrentCaller, db: Db, all_map_indices: Annotated[bool, Query(
        description="true: clear every map index of this task in this run; false (default): only the "
        "caller's own map index.")] = False) -> ClearedOut:
    ti = caller.task_instance(ti_id)
    async with db.transaction() as conn:
        deleted = await clear_task_state(conn, ti, all_map_indices=all_map_indices)
    return ClearedOut(deleted=deleted)
