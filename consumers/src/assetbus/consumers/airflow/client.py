"""A small async client for Airflow 3's public REST API (`/api/v2`), as a service account authenticated by
the account's one method (docs/airflow.md, "Authenticating to Airflow"); `request` maps Airflow's answers onto
the errors of `consumers.airflow.errors`.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx

from assetbus.consumers.airflow.account import AirflowAccount, load_auth
from assetbus.consumers.airflow.errors import (
    AirflowAuthError,
    AirflowError,
    AirflowNotFound,
    AirflowRefused,
    AirflowTokenRefused,
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


def _stale_token(response: httpx.Response) -> bool:
    """A token Airflow no longer accepts: 401, or the 403 "Invalid JWT token" that Airflow 3.3.2 answers to a
    token it cannot verify (one signed before its JWT secret changed, say)."""
    return response.status_code == 401 or (response.status_code == 403 and "token" in _detail(response).lower())


class AirflowClient(AbstractAsyncContextManager["AirflowClient"]):
    """`async with AirflowClient(account) as airflow: await airflow.get(...)`."""

    def __init__(self, account: AirflowAccount, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.account = account
        self._http = httpx.AsyncClient(base_url=account.url.rstrip("/"), timeout=account.timeout_s,
                                       transport=transport,
                                       auth=load_auth(account.auth) if account.method == "auth" else None,
                                       headers={"Authorization": f"Bearer {account.token}"}
                                       if account.method == "token" else None)
        self._token: str | None = None
        self._token_lock = asyncio.Lock()

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
        password = self.account.method == "password"
        token = (self._token or await self._fresh_token(None)) if password else None
        for attempt in (1, 2):
            try:
                response = await self._http.request(method, API + path, json=json, params=params,
                                                    headers={"Authorization": f"Bearer {token}"} if password else None)
            except httpx.HTTPError as error:
                raise AirflowUnavailable(f"Airflow at {self.account.url} did not answer {method} {path}: "
                                         f"{type(error).__name__}: {error}") from error
            if attempt == 1 and password and _stale_token(response):
                token = await self._fresh_token(token)
                continue
            break
        status = response.status_code
        if status < 300 or status in accept:
            return response
        message = f"Airflow answered {status} to {method} {path}: {_detail(response)}"
        if self.account.method == "token" and _stale_token(response):
            raise AirflowTokenRefused(f"the Airflow token was refused: expired or revoked (ASSETBUS_AIRFLOW_TOKEN; "
                                      f"{message})", status=status)
        if status == 401 or status == 403:
            raise AirflowAuthError(message + f" ({self.account.describe()})", status=status)
        if status == 404:
            raise AirflowNotFound(message, status=status)
        if status >= 500 or status == 429:
            raise AirflowUnavailable(message, status=status)
        if 400 <= status < 500:
            raise AirflowRefused(message, status=status)
        raise AirflowError(message, status=status)

    async def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return (await self.request("GET", path, params=params)).json()

    async def pages(self, path: str, key: str, *, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paged list endpoint (`{key: [...], "total_entries": n}`), 100 a page."""
        items: list[dict[str, Any]] = []
        while True:
            page = await self.get(path, {**(params or {}), "limit": 100, "offset": len(items)})
            batch = page.get(key, [])
            items.extend(batch)
            if not batch or len(items) >= int(page.get("total_entries", 0)):
                return items
