"""The task state key routes and the HTTP emit without FastAPI's per-request dependency resolution, answered
byte for byte as FastAPI would (docs/benchmarks.md, "Prepared statements and the task state fast path" and "The
HTTP emit on the fast path"). A request it cannot parse exactly as FastAPI would goes to FastAPI unchanged:
nothing is done before that decision, so the fallback has no side effects. It sits inside the version,
body-limit and metrics middleware (the body is already buffered, the request counted under its route template).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from assetbus.consumers.api.body_limit import replay
from assetbus.consumers.api.database import Database
from assetbus.consumers.api.errors import render_error
from assetbus.consumers.api.gateway import EmissionGateway
from assetbus.consumers.api.models import KEY_PATTERN, EmitRequest, TaskStoreValueIn
from assetbus.consumers.api.routes import emit as emit_route
from assetbus.consumers.api.routes import task_state
from assetbus.consumers.api.security import caller_of
from assetbus.schemas import KEY_MAX_LENGTH

_PREFIXES = (task_state.STORE_PREFIX + "/", task_state.ALIAS_PREFIX + "/")
_KEY = re.compile(KEY_PATTERN)
_BEARER = "Bearer "
_UUID_LENGTH = 36  # the hyphenated form; other spellings go to FastAPI

Answer = Callable[[], Awaitable[Response]]
_Body = TypeVar("_Body", bound=BaseModel)


def _bearer(scope: Scope) -> str | None:
    """The token of `Authorization: Bearer <token>`, or None where FastAPI's `HTTPBearer` should decide."""
    authorization = Headers(scope=scope).get("authorization")
    if authorization is None or not authorization.startswith(_BEARER):
        return None
    token = authorization[len(_BEARER):].strip()
    return token if token and " " not in token else None


async def _body(receive: Receive) -> bytes:
    """The whole request body (the body-limit middleware outside has already read it, in one message)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            return b"".join(chunks)


async def _json_body(scope: Scope, receive: Receive, body_read: list[bytes], model: type[_Body]) -> _Body | None:
    """The body as FastAPI would hand it to the route, or None for FastAPI to answer (422 with field errors)."""
    if Headers(scope=scope).get("content-type") != "application/json":
        return None  # FastAPI decides what another (or no) content type means
    raw = await _body(receive)
    body_read.append(raw)
    try:
        decoded: Any = json.loads(raw)
        return model.model_validate(decoded)
    except (ValueError, ValidationError):
        return None


def _taken(scope: Scope, route: APIRoute) -> Any:
    """The app's state, the request marked as `route`'s (the metrics middleware labels it by its template)."""
    scope["route"] = route
    return scope["app"].state


class FastPath:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._routes = {(route.path, method): route for router in (task_state.router, emit_route.router)
                        for route in router.routes if isinstance(route, APIRoute) for method in route.methods or ()}
        """The route objects by (template, method), for the metrics middleware's `route` label."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body: list[bytes] = []  # what parsing read of the request body, handed on if FastAPI answers
        answer = await self._parse(scope, receive, body) if scope["type"] == "http" else None
        if answer is None:
            if body:
                receive = replay([{"type": "http.request", "body": body[0], "more_body": False}], then=receive)
            await self.app(scope, receive, send)
            return
        try:
            response = await answer()
        except Exception as error:
            response = await render_error(Request(scope), error)
        await response(scope, receive, send)

    async def _parse(self, scope: Scope, receive: Receive, body_read: list[bytes]) -> Answer | None:
        """The handler call this request stands for, or None for FastAPI to answer it."""
        if scope.get("root_path"):
            return None
        path: str = scope["path"]
        if path == emit_route.PATH:
            return await self._emit(scope, receive, body_read) if scope["method"] == "POST" else None
        if path.startswith(_PREFIXES):
            return await self._store(scope, receive, body_read)
        return None

    async def _emit(self, scope: Scope, receive: Receive, body_read: list[bytes]) -> Answer | None:
        token = _bearer(scope)
        route = self._routes.get((emit_route.PATH, "POST"))
        if token is None or route is None:
            return None
        body = await _json_body(scope, receive, body_read, EmitRequest)
        if body is None:
            return None
        app_state = _taken(scope, route)
        gateway: EmissionGateway = app_state.gateway

        async def answer() -> Response:
            receipt = await emit_route.emit(body, caller_of(app_state.verifier, token), gateway)
            return emit_route.receipt_response(receipt)

        return answer

    async def _store(self, scope: Scope, receive: Receive, body_read: list[bytes]) -> Answer | None:
        path: str = scope["path"]
        method: str = scope["method"]
        if method not in ("GET", "PUT", "DELETE"):
            return None
        prefix = _PREFIXES[0] if path.startswith(_PREFIXES[0]) else _PREFIXES[1]
        ti_text, slash, key = path[len(prefix):].partition("/")
        if not slash or len(ti_text) != _UUID_LENGTH or not 1 <= len(key) <= KEY_MAX_LENGTH \
                or _KEY.fullmatch(key) is None:
            return None
        token = _bearer(scope)
        if token is None:
            return None
        try:
            ti_id = uuid.UUID(ti_text)
        except ValueError:
            return None
        route = self._routes.get((prefix + "{task_instance_id}/{key:path}", method))
        if route is None:
            return None
        app_state = _taken(scope, route)
        db: Database = app_state.database
        verifier = app_state.verifier
        if method == "GET":
            return lambda: task_state.get_value(ti_id, key, caller_of(verifier, token), db)
        headers = Headers(scope=scope)
        if_match = headers.get("if-match")
        if method == "DELETE":
            return lambda: task_state.delete_value(ti_id, key, caller_of(verifier, token), db, if_match)
        body = await _json_body(scope, receive, body_read, TaskStoreValueIn)
        if body is None:
            return None
        if_none_match = headers.get("if-none-match")
        return lambda: task_state.put_value(ti_id, key, body, caller_of(verifier, token), db, if_match, if_none_match)
