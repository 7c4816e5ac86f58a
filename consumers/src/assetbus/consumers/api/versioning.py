"""Dated API versions (`Assetbus-API-Version: 2026-11-29`; docs/state.md, "Versions" tells when a new one is
needed): the newest version not later than the requested date serves a request.
"""

from __future__ import annotations

import re
from datetime import date

from fastapi import Header
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assetbus.consumers.api.errors import ApiErrorCode, ErrorBody, error_response
from assetbus.consumers.errors import ConsumerError

VERSION_HEADER = "Assetbus-API-Version"
API_VERSIONS: tuple[str, ...] = ("2026-11-29",)
"""Every version this server speaks, oldest first."""
LATEST_VERSION = API_VERSIONS[-1]
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class UnsupportedVersion(ConsumerError, ValueError):
    """The `Api-Version` a request names is not one this server speaks."""


def resolve_version(requested: str | None) -> str:
    """The version that serves a request naming `requested` (a date); raises UnsupportedVersion."""
    if requested is None or not requested.strip():
        return LATEST_VERSION
    requested = requested.strip()
    if not _DATE.match(requested):
        raise UnsupportedVersion(f"{VERSION_HEADER} must be a date like {LATEST_VERSION}, not {requested[:40]!r}")
    try:
        asked = date.fromisoformat(requested)
    except ValueError as error:
        raise UnsupportedVersion(f"{VERSION_HEADER} {requested!r} is not a valid date") from error
    usable = [v for v in API_VERSIONS if date.fromisoformat(v) <= asked]
    if not usable:
        raise UnsupportedVersion(f"{VERSION_HEADER} {requested} predates the oldest version, {API_VERSIONS[0]}")
    return usable[-1]


async def version_header(
    assetbus_api_version: str | None = Header(
        default=None, alias=VERSION_HEADER,
        description=f"The API version (a date) the client was written for; default the newest ({LATEST_VERSION}).",
    ),
) -> None:
    """Documents the header in OpenAPI; `ApiVersionMiddleware` does the work (before authentication)."""


class ApiVersionMiddleware:
    """Resolves the version header (400 if unusable) and echoes the resolved version on every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            version = resolve_version(Headers(scope=scope).get(VERSION_HEADER))
        except UnsupportedVersion as error:
            body = ErrorBody(code=ApiErrorCode.UNSUPPORTED_API_VERSION,
                             message=f"{error}; supported: {', '.join(API_VERSIONS)}")
            await error_response(400, body, {VERSION_HEADER: LATEST_VERSION}, scope["path"])(scope, receive, send)
            return
        scope.setdefault("state", {})["api_version"] = version

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append(VERSION_HEADER, version)
            await send(message)

        await self.app(scope, receive, send_with_version)
