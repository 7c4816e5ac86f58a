"""The task state store's key routes without FastAPI's per-request machinery.

GET, PUT and DELETE of `/execution/store/ti/{task_instance_id}/{key:path}` (and the deprecated
`/execution/state/ti/…` alias) are most of a task's API traffic. FastAPI resolves a tree of
dependencies for each (path, headers, token, database, body), about a third of the CPU of such a
request. `StoreFastPath` answers them directly: it parses what the route declares, then calls the
route's own handler (`routes.task_state`), and renders an error with the app's own exception
handlers, so a response is the same, byte for byte.

It only takes a request it can parse exactly as FastAPI would: a canonical task instance id, a key
that passes the route's pattern, `Authorization: Bearer <token>`, a JSON body (no content type, or
`application/json`) that validates. Anything else (a malformed id or key, another auth scheme, a body
that does not validate, a root path) goes to FastAPI unchanged, which answers it as before (a 422 with
its field errors, say): nothing is done before that decision, so the fallback has no side effects.
It sits inside the version, body-limit and metrics middleware (the body is already buffered, and
the request is counted under its route template).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from assetbus.consumers.api.body_limit import replay
from assetbus.consumers.api.database import Database
from assetbus.consumers.api.errors import render_error
from assetbus.consumers.api.models import KEY_PATTERN, TaskStoreValueIn
from assetbus.consumers.api.routes import task_state
from assetbus.consumers.api.security import caller_of
from assetbus.schemas import KEY_MAX_LENGTH

_PREFIXES = (task_state.STORE_PREFIX + "/", task_state.ALIAS_PREFIX + "/")
_KEY = re.compile(KEY_PATTERN)
_BEARER = b"Bearer "
_JSON = b"application/json"
_UUID_LENGTH = 36  # the hyphenated form; other spellings go to FastAPI


def _header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a header (names are lower case in ASGI), as Starlette's `Headers.get`."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


async def _body(receive: Receive) -> bytes:
    """The whole request body (the body-limit middleware outside has already read it, in one message)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            return b"".join(chunks)


class StoreFastPath:
    """ASGI middleware: the task state key routes answered without FastAPI's routing (module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._routes: dict[tuple[str, str], APIRoute] = {}

    def _route(self, template: str, method: str) -> APIRoute | None:
        """The route object, for the metrics middleware's `route` label (looked up once)."""
        found = self._routes.get((template, method))
        if found is None:
            for route in task_state.router.routes:
                if isinstance(route, APIRoute) and route.path == template and method in (route.methods or ()):
                    found = self._routes[(template, method)] = route
                    break
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body: list[bytes] = []  # what `_parse` read of the request body, handed on if FastAPI answers
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

    async def _parse(self, scope: Scope, receive: Receive,
                     body_read: list[bytes]) -> Callable[[], Awaitable[Response]] | None:
        """The handler call this request stands for, or None for FastAPI to answer it."""
        path: str = scope["path"]
        method: str = scope["method"]
        if method not in ("GET", "PUT", "DELETE") or not path.startswith(_PREFIXES) or scope.get("root_path"):
            return None
        prefix = _PREFIXES[0] if path.startswith(_PREFIXES[0]) else _PREFIXES[1]
        ti_text, slash, key = path[len(prefix):].partition("/")
        if not slash or len(ti_text) != _UUID_LENGTH or not 1 <= len(key) <= KEY_MAX_LENGTH \
                or _KEY.fullmatch(key) is None:
            return None
        authorization = _header(scope, b"authorization")
        if authorization is None or not authorization.startswith(_BEARER):
            return None
        token = authorization[len(_BEARER):].decode("latin-1").strip()
        try:
            ti_id = uuid.UUID(ti_text)
        except ValueError:
            return None
        if not token or " " in token:
            return None
        route = self._route(prefix + "{task_instance_id}/{key:path}", method)
        if route is None:
            return None
        scope["route"] = route
        app_state = scope["app"].state
        db: Database = app_state.database
        verifier = app_state.verifier
        if method == "GET":
            return lambda: task_state.get_value(ti_id, key, caller_of(verifier, token), db)
        if_match = _text(_header(scope, b"if-match"))
        if method == "DELETE":
            return lambda: task_state.delete_value(ti_id, key, caller_of(verifier, token), db, if_match)
        body = await self._put_body(scope, receive, body_read)
        if body is None:
            return None
        if_none_match = _text(_header(scope, b"if-none-match"))
        return lambda: task_state.put_value(ti_id, key, body, caller_of(verifier, token), db, if_match, if_none_match)

    async def _put_body(self, scope: Scope, receive: Receive, body_read: list[bytes]) -> TaskStoreValueIn | None:
        content_type = _header(scope, b"content-type")
        if content_type is not None and content_type != _JSON:
            return None  # FastAPI decides what another content type means
        raw = await _body(receive)
        body_read.append(raw)
        try:
            decoded: Any = json.loads(raw)
            return TaskStoreValueIn.model_validate(decoded)
        except (ValueError, ValidationError):  # FastAPI answers it (422 with the field errors)
            return None


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None
