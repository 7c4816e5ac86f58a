"""`/ui`: the operators' page, and the read-only JSON it polls under `/ui/api/...` (docs/ui.md), each listing one
page of a keyset-paginated, indexed query (`before` / `after` cursors, at most `MAX_PAGE` rows).
"""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import AsyncIterator
from importlib.resources import files
from typing import Annotated
from urllib.parse import parse_qs

from aiokafka.errors import KafkaError
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode
from assetbus.consumers.api.security import Credentials
from assetbus.consumers.api.ui.models import (
    AssetOut,
    DagOut,
    DeadLetterOut,
    EventDetail,
    EventOut,
    LagOut,
    RunDetail,
    RunOut,
    WaitingOut,
)
from assetbus.consumers.api.ui.waiting import waiting_partitions
from assetbus.consumers.api.ui_auth import COOKIE, LOGIN_PATH, check_operator, presented_token, signed_in
from assetbus.consumers.observe.deadletters import read_dead_letters
from assetbus.consumers.observe.lag import consumer_group_lag
from assetbus.consumers.storage.catalog import (
    MAX_PAGE,
    asset_summaries,
    assets_by_name,
    events_by_id,
    latest_per_partition,
    list_events,
)
from assetbus.consumers.storage.dags import get_dag, list_dags
from assetbus.consumers.storage.queue import waiting_counts
from assetbus.consumers.storage.runs import event_lineage, get_run, list_runs, run_counts
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import Topics

router = APIRouter(prefix="/ui", include_in_schema=False)
api = APIRouter(prefix="/ui/api", include_in_schema=False, dependencies=[Depends(signed_in)])

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")]
_STATIC = files("assetbus.consumers.api.ui") / "static"
_PAGE = (_STATIC / "index.html").read_text(encoding="utf-8")
_LOGIN = (_STATIC / "login.html").read_text(encoding="utf-8")
_NO_STORE = {"Cache-Control": "no-store"}


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
async def page(request: Request, credentials: Credentials) -> Response:
    """The page for a signed-in operator; anyone else is sent to the sign-in page."""
    try:
        check_operator(request.app.state.operator_verifier, presented_token(request, credentials))
    except ApiError:
        return RedirectResponse(LOGIN_PATH, status_code=303, headers=_NO_STORE)
    return HTMLResponse(_PAGE, headers={"Cache-Control": "no-cache"})


def _login_page(message: str = "", status: int = 200) -> HTMLResponse:
    shown = f'<p class="error" data-testid="login-error">{html.escape(message)}</p>' if message else ""
    return HTMLResponse(_LOGIN.replace("<!--message-->", shown), status_code=status, headers=_NO_STORE)


@router.get("/login", response_class=HTMLResponse)
async def login_page() -> HTMLResponse:
    return _login_page()


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """The form's operator token: valid with `ui:read` → the sign-in cookie and back to `/ui`; else the form
    again with the reason (401: missing, forged or expired; 403: not an operator token)."""
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = "".join(form.get("token", [""])[:1]).strip()
    try:
        operator = check_operator(request.app.state.operator_verifier, token)
    except ApiError as error:
        return _login_page(error.body.message, status=error.status)
    response = RedirectResponse("/ui", status_code=303, headers=_NO_STORE)
    response.set_cookie(COOKIE, token, max_age=max(1, operator.expires_at - int(time.time())), path="/ui",
                        httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post("/logout")
async def logout() -> Response:
    response = RedirectResponse(LOGIN_PATH, status_code=303, headers=_NO_STORE)
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


def _not_found(what: str) -> ApiError:
    return ApiError(404, ApiErrorCode.NOT_FOUND, f"{what} is not known")


@api.get("/assets", response_model=list[AssetOut])
async def assets(db: Db, after: str | None = None, limit: Limit = 100) -> list[AssetOut]:
    async with db.transaction() as conn:
        return [AssetOut.of(a) for a in await asset_summaries(conn, after_name=after, limit=limit)]


@api.get("/assets/{name}/partitions", response_model=list[EventOut])
async def asset_partitions(db: Db, name: str, before: str | None = None, limit: Limit = 50) -> list[EventOut]:
    """The newest event of each partition of the asset, partition keys descending."""
    async with db.transaction() as conn:
        asset = (await assets_by_name(conn, [name])).get(name)
        if asset is None:
            raise _not_found(f"asset {name!r}")
        return [EventOut.of(e) for e in await latest_per_partition(conn, asset.id, before_key=before, limit=limit)]


@api.get("/events", response_model=list[EventOut])
async def events(db: Db, asset: str | None = None, partition: str | None = None, before: int | None = None,
                 after: int | None = None, limit: Limit = 50) -> list[EventOut]:
    """Newest first below `before`; oldest first above `after` (the live feed polls with the last id it has)."""
    async with db.transaction() as conn:
        found = await list_events(conn, asset=asset, partition_key=partition, before_id=before, after_id=after,
                                  limit=limit)
    return [EventOut.of(e) for e in found]


@api.get("/events/{event_id}", response_model=EventDetail)
async def event(db: Db, event_id: int) -> EventDetail:
    async with db.transaction() as conn:
        stored = (await events_by_id(conn, [event_id])).get(event_id)
        if stored is None:
            raise _not_found(f"event {event_id}")
        lineage = await event_lineage(conn, event_id)
    return EventDetail(event=EventOut.of(stored), runs=[RunOut.of(r) for r in lineage.runs],
                       waiting_in=[{"dag_id": w.dag_id, "target_key": w.target_key} for w in lineage.waiting])


@api.get("/dags", response_model=list[DagOut])
async def dags(db: Db) -> list[DagOut]:
    async with db.transaction() as conn:
        rows, counts, waiting = await list_dags(conn), await run_counts(conn), await waiting_counts(conn)
    return [DagOut.of(d, counts.get(d.dag_id, {}), waiting.get(d.dag_id, (0, 0))) for d in rows]


@api.get("/dags/{dag_id}/runs", response_model=list[RunOut])
async def dag_runs(db: Db, dag_id: str, before: int | None = None, status: str | None = None,
                   limit: Limit = 50) -> list[RunOut]:
    async with db.transaction() as conn:
        if await get_dag(conn, dag_id) is None:
            raise _not_found(f"consumer DAG {dag_id!r}")
        found = await list_runs(conn, dag_id=dag_id, status=status, before_id=before, limit=limit)
    return [RunOut.of(r) for r in found]


@api.get("/dags/{dag_id}/waiting", response_model=list[WaitingOut])
async def dag_waiting(db: Db, dag_id: str, after: str | None = None, limit: Limit = 50) -> list[WaitingOut]:
    async with db.transaction() as conn:
        return await waiting_partitions(conn, dag_id, after_key=after, limit=limit)


@api.get("/runs/{run_id}", response_model=RunDetail)
async def run(db: Db, run_id: str) -> RunDetail:
    async with db.transaction() as conn:
        found = await get_run(conn, run_id)
        if found is None:
            raise _not_found(f"run {run_id!r}")
        stored = await events_by_id(conn, [int(e["event_id"]) for e in found.events])
    return RunDetail(run=RunOut.of(found), events=[EventOut.of(stored[i]) for i in sorted(stored)])


@contextlib.asynccontextmanager
async def _broker(request: Request) -> AsyncIterator[tuple[KafkaConnection, Topics]]:
    """The API's broker and topics; a broker that does not answer is a 503."""
    try:
        yield request.app.state.kafka, request.app.state.topics
    except (KafkaError, OSError, TimeoutError) as error:
        raise ApiError(503, ApiErrorCode.BROKER_UNAVAILABLE,
                       f"the broker did not answer: {type(error).__name__}", headers={"Retry-After": "2"}) from error


@api.get("/lag", response_model=list[LagOut])
async def lag(request: Request) -> list[LagOut]:
    async with _broker(request) as (connection, topics):
        groups = await consumer_group_lag(connection, topic_prefix=topics.prefix, timeout_s=5)
    return [LagOut.of(g) for g in groups]


@api.get("/dead-letters", response_model=list[DeadLetterOut])
async def dead_letters(request: Request, limit: Limit = 50) -> list[DeadLetterOut]:
    async with _broker(request) as (connection, topics):
        found = await read_dead_letters(connection, topics.emissions_dlq, limit=limit, timeout_s=5)
    return [DeadLetterOut.of(d) for d in found]
