"""The async state client: `await AsyncStateClient(api_url, token).task_state.get("checkpoint")`.

The classes and methods of the sync client (`sync.py`, where they are described), each awaited.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx

from assetbus.producers.api_client import ApiUnavailable, ExecutionApi
from assetbus.producers.state.protocol import (
    Call,
    StateValue,
    Target,
    asset_name,
    conditions,
    connect_policy,
    own_ti_id,
    read_cleared,
    read_deleted,
    read_entry,
    read_written,
    unreachable,
)


class _AsyncKeys:
    def __init__(self, client: AsyncStateClient, target: Target) -> None:
        self._client = client
        self._target = target

    async def get(self, key: str, default: Any = None) -> Any:
        entry = await self.get_entry(key)
        return entry.value if entry is not None else default

    async def get_entry(self, key: str) -> StateValue | None:
        return read_entry(await self._client.send(self._target.key_call("GET", key)), key)

    async def set(self, key: str, value: Any, *, if_version: int | None = None, only_if_absent: bool = False,
                  expires_at: datetime | None = None) -> StateValue:
        call = self._target.key_call("PUT", key, headers=conditions(if_version, only_if_absent),
                                     json=self._target.set_body(value, expires_at))
        return read_written(await self._client.send(call), key, value)

    async def delete(self, key: str, *, if_version: int | None = None) -> bool:
        call = self._target.key_call("DELETE", key, headers=conditions(if_version))
        return read_deleted(await self._client.send(call))


class AsyncTaskState(_AsyncKeys):
    async def clear(self, *, all_map_indices: bool = False) -> int:
        return read_cleared(await self._client.send(self._target.clear_call(all_map_indices)))

    async def succeeded(self) -> int:
        return read_cleared(await self._client.send(self._target.success_call()))


class AsyncAssetState(_AsyncKeys):
    async def clear(self) -> int:
        return read_cleared(await self._client.send(self._target.clear_call()))


class AsyncAsset:
    """`client.asset("orders").state` — `await ....get("watermark")`."""

    def __init__(self, client: AsyncStateClient, name: str) -> None:
        self.name = name
        self.state = AsyncAssetState(client, Target(asset_name=name))


class AsyncStateClient:
    """Task and asset state over the execution API, with the task's token. `async with` it."""

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 10.0, connect_retries: int = 2,
                 http: httpx.AsyncClient | None = None) -> None:
        self.token = token
        self._api = ExecutionApi(base_url, token, timeout_s=timeout_s, http=http, retry=connect_policy(connect_retries))
        self._task_state: AsyncTaskState | None = None

    @property
    def task_state(self) -> AsyncTaskState:
        if self._task_state is None:
            self._task_state = AsyncTaskState(self, Target(ti_id=own_ti_id(self.token)))
        return self._task_state

    def asset(self, asset: object) -> AsyncAsset:
        return AsyncAsset(self, asset_name(asset))

    async def send(self, call: Call) -> httpx.Response:
        try:
            return await self._api.request(call.method, call.path, repeatable=False, json=call.json,
                                           params=call.params, headers=call.headers)
        except ApiUnavailable as error:
            raise unreachable(error) from error

    async def aclose(self) -> None:
        await self._api.aclose()

    async def __aenter__(self) -> AsyncStateClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
