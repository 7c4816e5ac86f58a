"""The execution API's token route, answered in-process: `answer(url, **request)` stands in for the server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest


def answer_token_requests(monkeypatch: pytest.MonkeyPatch, answer: Callable[..., httpx.Response]) -> None:
    """Every request of an `httpx.Client` (the SDK's `SyncExecutionApi`) goes to `answer(full_url, **kwargs)`."""

    def request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return answer(str(client.base_url).rstrip("/") + url, **kwargs)

    monkeypatch.setattr(httpx.Client, "request", request)
