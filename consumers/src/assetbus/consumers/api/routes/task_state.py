"""Task state store: `/execution/store/ti/{task_instance_id}/{key:path}` and the clear, as Airflow 3.3 (docs/state.md,
"Task state over HTTP"), and the deprecated `/execution/state/ti/…` aliases. Each request is one prepared SQL
statement that commits by itself (`db.raw()`, `storage.state`).
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.models import TaskStoreValueIn
from assetbus.consumers.api.routes.common import (
    IfMatch,
    IfNoneMatch,
    PathKey,
    add_store_routes,
    check_value,
    no_content,
    parse_precondition,
    stored_value_response,
)
from assetbus.consumers.api.security import CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.state import clear_task, delete_task_value, get_task_value, set_task_value
from assetbus.schemas import SCOPE_TASK_MAPPED

STORE_PREFIX = "/execution/store/ti"
ALIAS_PREFIX = "/execution/state/ti"

router = APIRouter(tags=["task state store"], dependencies=[Depends(version_header)])
TiId = Annotated[UUID, Path(description="The task instance id, `schemas.task_instance_id(dag_id, run_id, task_id, "
                                        "map_index)`; it must be the token's own.")]
AllMapIndices = Annotated[bool, Query(description="true: clear every map index of this task in this run (needs "
                                      "scope `ti:mapped`, which task tokens do not carry); false (default): only "
                                      "the caller's own map index.")]


async def get_value(task_instance_id: TiId, key: PathKey, caller: CurrentCaller, db: Db) -> Response:
    ti = caller.task_instance(task_instance_id)
    async with db.raw() as conn:
        found = await get_task_value(conn, ti, key)
    if found is None:
        raise ApiError(404, ApiErrorCode.NOT_FOUND, f"Task state store key {key!r} not found")
    return stored_value_response(found)


async def put_value(task_instance_id: TiId, key: PathKey, body: TaskStoreValueIn, caller: CurrentCaller, db: Db,
                    if_match: IfMatch = None, if_none_match: IfNoneMatch = None) -> Response:
    ti = caller.task_instance(task_instance_id)
    when = parse_precondition(if_match, if_none_match)
    value_json = check_value(body.value)
    async with db.raw() as conn:
        version = await set_task_value(conn, ti, key, value_json, when, body.expires_at)
    return no_content(version=version)


async def delete_value(task_instance_id: TiId, key: PathKey, caller: CurrentCaller, db: Db,
                       if_match: IfMatch = None) -> Response:
    ti = caller.task_instance(task_instance_id)
    when = parse_precondition(if_match)
    async with db.raw() as conn:
        deleted = await delete_task_value(conn, ti, key, when)
    return no_content(deleted=int(deleted))


async def clear(task_instance_id: TiId, caller: CurrentCaller, db: Db, all_map_indices: AllMapIndices = False,
                ) -> Response:
    ti = caller.task_instance(task_instance_id)
    if all_map_indices:
        caller.require(SCOPE_TASK_MAPPED)
    async with db.raw() as conn:
        deleted = await clear_task(conn, ti, all_map_indices=all_map_indices)
    return no_content(deleted=deleted)


async def on_success(task_instance_id: TiId, caller: CurrentCaller, db: Db, request: Request) -> Response:
    """Airflow's `clear_on_success` hook: the task instance succeeded. With `ASSETBUS_API_STATE_CLEAR_ON_SUCCESS`
    its state is cleared (its own map index only, as Airflow does); otherwise nothing happens."""
    ti = caller.task_instance(task_instance_id)
    if not request.app.state.config.state_clear_on_success:
        return no_content(deleted=0)
    async with db.raw() as conn:
        deleted = await clear_task(conn, ti)
    return no_content(deleted=deleted)


router.add_api_route(STORE_PREFIX + "/{task_instance_id}/on-success", on_success, methods=["POST"], status_code=204,
                     response_class=Response, responses=responses(403, store=True),
                     summary="The task instance succeeded: clear its state if clear_on_success is on "
                     "(an assetbus extension; `Assetbus-Deleted` says how many keys went)")
for _prefix, _alias in ((STORE_PREFIX, ""), (ALIAS_PREFIX, " (deprecated alias of `/execution/store/ti/…`)")):
    add_store_routes(router, _prefix + "/{task_instance_id}/{key:path}", _prefix + "/{task_instance_id}",
                     (get_value, put_value, delete_value, clear), key="a task state store key",
                     clear="Clear the task instance's state store (or, opted in, every map index of its task)",
                     alias=_alias)
