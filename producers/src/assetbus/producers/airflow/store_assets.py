"""Which asset an Airflow `AssetScope` names, and which Airflow task asks for its state: `StateCallerMiddleware`
keeps each `/execution/` request's bearer token for `airflow_calling_task` (None outside such a request);
docs/security.md, "Airflow's state store backend", says why that token is the caller's. Imports Airflow only
when called.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from uuid import UUID

from assetbus.producers.airflow.store_tokens import TaskIdentity

A = TypeVar("A")
T = TypeVar("T")

_BEARER: ContextVar[str | None] = ContextVar("assetbus_execution_bearer", default=None)


@dataclass(frozen=True)
class AssetAccess:
    """An asset's registered name, and the Airflow task (dag_id, task_id) the backend acts as for it."""

    name: str
    dag_id: str
    task_id: str


class AssetScopeLike(Protocol):
    asset_id: int | None
    name: str | None
    uri: str | None


AssetLookup = Callable[[AssetScopeLike, Any | None], AssetAccess | None]
CallerLookup = Callable[[Any | None], TaskIdentity | None]


def in_session(query: Callable[[A, Any], T]) -> Callable[[A, Any | None], T]:
    """`query(arg, session)`, with a fresh session of Airflow's metadata DB when the caller gives none."""
    def run(arg: A, session: Any | None) -> T:
        if session is not None:
            return query(arg, session)
        from airflow.utils.session import create_session

        with create_session() as fresh:
            return query(arg, fresh)
    return run


@in_session
def airflow_asset_lookup(scope: AssetScopeLike, session: Any) -> AssetAccess | None:
    """The asset's name and a task declaring it, from Airflow's metadata DB (None: no such asset).
    `dag_id`/`task_id` are empty when no task declares the asset."""
    from airflow.models.asset import AssetModel, TaskInletAssetReference, TaskOutletAssetReference
    from sqlalchemy import select

    if scope.asset_id is not None:
        where = AssetModel.id == scope.asset_id
    elif scope.name is not None:
        where = AssetModel.name == scope.name
    else:
        where = AssetModel.uri == scope.uri
    row = session.execute(select(AssetModel.id, AssetModel.name).where(where).order_by(AssetModel.id.desc())
                          .limit(1)).first()
    if row is None:
        return None
    asset_id, name = row
    for reference in (TaskOutletAssetReference, TaskInletAssetReference):
        task = session.execute(select(reference.dag_id, reference.task_id).where(reference.asset_id == asset_id)
                               .order_by(reference.dag_id, reference.task_id).limit(1)).first()
        if task is not None:
            return AssetAccess(name=name, dag_id=task[0], task_id=task[1])
    return AssetAccess(name=name, dag_id="", task_id="")


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class StateCallerMiddleware:
    """An ASGI middleware for Airflow's api-server: for the length of each request to Airflow's execution
    API (`/execution/...`), the request's bearer token is what `airflow_calling_task` reads."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reset = _BEARER.set(_execution_bearer(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            _BEARER.reset(reset)


def _execution_bearer(scope: Scope) -> str | None:
    if scope.get("type") != "http":
        return None
    path = str(scope.get("path", ""))
    if not path.removeprefix(str(scope.get("root_path", ""))).startswith("/execution/"):
        return None
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return bytes(value[7:]).decode("latin-1").strip() or None
    return None


def calling_task_instance_id() -> UUID | None:
    """The id of the task instance whose execution-API request is being served (None: no such request).

    Not verified here: Airflow's execution API verified this token before its route called the backend."""
    token = _BEARER.get()
    if token is None:
        return None
    import jwt

    try:
        subject = jwt.decode(token, options={"verify_signature": False}).get("sub")
        found = UUID(str(subject))
    except (jwt.PyJWTError, ValueError):
        return None
    return None if found.int == 0 else found  # Airflow's null id: an AssetWatcher, not a task


@in_session
def _calling_task(ti_id: UUID, session: Any) -> TaskIdentity | None:
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select

    row = session.execute(select(TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id,
                                 TaskInstance.map_index).where(TaskInstance.id == ti_id)).first()
    return None if row is None else (row[0], row[1], row[2], int(row[3]))


def airflow_calling_task(session: Any | None) -> TaskIdentity | None:
    """The task instance asking, from the request's token and Airflow's metadata DB (None: unknown)."""
    ti_id = calling_task_instance_id()
    return None if ti_id is None else _calling_task(ti_id, session)
