"""An oversized body gets its 413 over a real socket, on a keep-alive connection, every time."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

pytestmark = pytest.mark.integration

THREE_MB = b"x" * (3 * 1024 * 1024)


def url(base: str) -> str:
    return f"{base}/execution/store/ti/{uuid.uuid4()}/checkpoint"


async def test_an_oversized_put_with_a_length_is_answered_413_each_time(api_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(6):
            response = await client.put(url(api_url), content=THREE_MB, headers={"Content-Type": "application/json"})
            assert response.status_code == 413
            assert response.json()["detail"]["reason"] == "body_too_large"


async def test_an_oversized_streamed_put_is_answered_413_each_time(api_url: str) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(THREE_MB), 64 * 1024):
            yield THREE_MB[start:start + 64 * 1024]

    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(6):
            response = await client.put(url(api_url), content=chunks(), headers={"Content-Type": "application/json"})
            assert response.status_code == 413
            assert response.json()["detail"]["reason"] == "body_too_large"


async def test_the_connection_serves_the_next_request_after_a_413(api_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        rejected = await client.put(url(api_url), content=THREE_MB, headers={"Content-Type": "application/json"})
        after = await client.get(f"{api_url}/healthz")
    assert rejected.status_code == 413
    assert after.status_code == 200
