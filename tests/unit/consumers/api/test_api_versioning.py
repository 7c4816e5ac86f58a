"""Dated API versions: resolution, and the middleware that answers 400 or echoes the version."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from assetbus.consumers.api.body_limit import BodyLimitMiddleware
from assetbus.consumers.api.versioning import (
    API_VERSIONS,
    LATEST_VERSION,
    ApiVersionMiddleware,
    UnsupportedVersion,
    resolve_version,
)


def test_no_header_is_the_latest_version() -> None:
    assert resolve_version(None) == resolve_version("") == LATEST_VERSION


def test_a_later_date_is_served_by_the_newest_version_not_after_it() -> None:
    assert resolve_version("2099-01-01") == LATEST_VERSION
    assert resolve_version(API_VERSIONS[0]) == API_VERSIONS[0]


@pytest.mark.parametrize("value", ["2020-01-01", "v1", "2026-13-01", "2026-11-31", "latest"])
def test_unusable_versions_are_refused(value: str) -> None:
    with pytest.raises(UnsupportedVersion):
        resolve_version(value)


async def _echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"version": request.scope["state"]["api_version"], "size": len(body)})


def client(max_bytes: int = 100) -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/echo", _echo, methods=["GET", "POST"])])
    wrapped = ApiVersionMiddleware(BodyLimitMiddleware(app, max_bytes=max_bytes))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=wrapped), base_url="http://t")


async def test_the_middleware_echoes_the_resolved_version() -> None:
    async with client() as c:
        response = await c.get("/echo", headers={"Assetbus-API-Version": "2099-01-01"})
    assert response.json()["version"] == LATEST_VERSION
    assert response.headers["assetbus-api-version"] == LATEST_VERSION


async def test_the_middleware_answers_400_for_an_unsupported_version() -> None:
    async with client() as c:
        response = await c.get("/echo", headers={"Assetbus-API-Version": "1999-01-01"})
    assert response.status_code == 400
    assert response.json()["code"] == "unsupported_api_version"


async def test_a_body_over_the_limit_is_413_declared_or_streamed() -> None:
    async def chunks() -> object:
        for _ in range(5):
            yield b"x" * 30

    async with client(max_bytes=100) as c:
        small = await c.post("/echo", content=b"x" * 100)
        declared = await c.post("/echo", content=b"x" * 101)
        streamed = await c.post("/echo", content=chunks())  # type: ignore[arg-type]
    assert small.status_code == 200 and small.json()["size"] == 100
    assert declared.status_code == 413 and declared.json()["code"] == "body_too_large"
    assert streamed.status_code == 413
