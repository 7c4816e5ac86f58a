"""A small async client for Airflow 3's public REST API (`/api/v2`), as a service account.

Authentication is Airflow's normal token flow: `POST /auth/token` with the account's user name and
password gives a JWT that goes in `Authorization: Bearer`. A 401 fetches a fresh token once; a
second 401, or a 403, is an AirflowAuthError. No answer, 5xx and 429 are AirflowUnavailable
(retriable). Everything else is translated into the errors of `consumers.airflow.errors`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from assetbus.consumers.airflow.account import AirflowAccount
from assetbus.consumers.airflow.errors import (
    AirflowAuthError,
    AirflowError,
    AirflowNotFound,
    AirflowRefused,
    AirflowUnavailable,
)

API = "/api/v2"


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return str(detail)[:300]


class AirflowClient:
    """`async with AirflowClient(account) as airflow: await airflow.get(...)`."""

    def __init__(self, account: AirflowAccount, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.account = account
        self._http = httpx.AsyncClient(base_url=account.url.rstrip("/"), timeout=account.timeout_s,
                                       transport=transport)
        self._token: str | None = None
        self._token_lock = asyncio.Lock()

    async def __aenter__(self) -> AirflowClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _fresh_token(self, stale: str | None) -> str:
        async with self._token_lock:
            if self._token is not None and self._token != stale:
                return self._token
            try:
                response = await self._http.post("/auth/token", json={"username": self.account.username,
                                                                       "password": self.account.password})
            except httpx.HTTPError as error:
                raise AirflowUnavailable(f"Airflow at {self.account.url} did not answer the token request: "
                                         f"{type(error).__name__}: {error}") from error
            if response.status_code >= 500:
                raise AirflowUnavailable(f"Airflow's token endpoint answered {response.status_code}",
                                         status=response.status_code)
            if response.status_code != 201 and response.status_code != 200:
                raise AirflowAuthError(f"Airflow refused the account {self.account.username!r} at /auth/token "
                                       f"({response.status_code}: {_detail(response)})", status=response.status_code)
            token = response.json().get("access_token")
            if not isinstance(token, str):
                raise AirflowAuthError("Airflow's /auth/token answer has no access_token")
            self._token = token
            return token

    async def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                      accept: tuple[int, ...] = ()) -> httpx.Response:
        """One API call (path relative to /api/v2). Statuses in `accept` are returned, not raised."""
        token = self._token or await self._fresh_token(None)
        for attempt in (1, 2):
            try:
                response = await self._http.request(method, API + path, json=json, params=params,
                                                    headers={"Authorization": f"Bearer {token}"})
            except httpx.HTTPError as error:
                raise AirflowUnavailable(f"Airflow at {self.account.url} did not answer {method} {path}: "
                                         f"{type(error).__name__}: {error}") from error
            if response.status_code == 401 and attempt == 1:
                token = await self._fresh_token(token)
                continue
            break
        status = response.status_code
        if status < 300 or status in accept:
            return response
        message = f"Airflow answered {status} to {method} {path}: {_detail(response)}"
        if status == 401 or status == 403:
            raise AirflowAuthError(message + f" (account {self.account.username!r})", status=status)
        if status == 404:
            raise AirflowNotFound(message, status=status)
        if status >= 500 or status == 429:
            raise AirflowUnavailable(message, status=status)
        if 400 <= status < 500:
            raise AirflowRefused(message, status=status)
        raise AirflowError(message, status=status)

    async def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return (await self.request("GET", path, params=params)).json()

    async def pages(self, path: str, key: str, *, limit: int = 100,
                    params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paged list endpoint (`{key: [...], "total_entries": n}`)."""
        items: list[dict[str, Any]] = []
        while True:
            page = await self.get(path, {**(params or {}), "limit": limit, "offset": len(items)})
            batch = page.get(key, [])
            items.extend(batch)
            if not batch or len(items) >= int(page.get("total_entries", 0)):
                return items
