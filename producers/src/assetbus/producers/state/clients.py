"""The state clients: `StateClient(api_url, token).task_state.get("checkpoint")`, and `AsyncStateClient` with the
same classes and methods (described on the blocking ones), each awaited."""

from __future__ import annotations

import contextlib
import functools
from datetime import datetime
from typing import Any

import httpx

from assetbus.producers.api_client import ApiUnavailable, ExecutionApi, SyncExecutionApi
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


class _Keys:
    def __init__(self, client: StateClient, target: Target) -> None:
        self._client = client
        self._target = target

    def get(self, key: str, default: Any = None) -> Any:
        """The value under `key`, or `default` if there is none."""
        entry = self.get_entry(key)
        return entry.value if entry is not None else default

    def get_entry(self, key: str) -> StateValue | None:
        """The value with its version (for compare-and-set), or None."""
        return read_entry(self._client.send(self._target.key_call("GET", key)), key)

    def set(self, key: str, value: Any, *, if_version: int | None = None, only_if_absent: bool = False,
            expires_at: datetime | None = None) -> StateValue:
        """Write the JSON `value` (task state: until `expires_at`, if given). With `if_version` (or
        `only_if_absent`) it is a compare-and-set: StateConflict if another writer got there first."""
        call = self._target.key_call("PUT", key, headers=conditions(if_version, only_if_absent),
                                     json=self._target.set_body(value, expires_at))
        return read_written(self._client.send(call), key, value)

    def delete(self, key: str, *, if_version: int | None = None) -> bool:
        """Delete `key` (a no-op if it has no value); False if it had none."""
        return read_deleted(self._client.send(self._target.key_call("DELETE", key, headers=conditions(if_version))))


class TaskState(_Keys):
    """The state of the token's own task instance (all tries share it)."""

    def clear(self, *, all_map_indices: bool = False) -> int:
        """Delete every key of this task instance; with `all_map_indices=True`, of every map index of the task."""
        return read_cleared(self._client.send(self._target.clear_call(all_map_indices)))

    def succeeded(self) -> int:
        """Tell the API this task instance succeeded: with the server's clear_on_success on, its state is
        cleared (Airflow 3.3's `[state_store] clear_on_success`). Returns how many keys went (0 if off)."""
        return read_cleared(self._client.send(self._target.success_call()))


class AssetState(_Keys):
    """The state of one asset; open to tasks registered with it as inlet or outlet."""

    def clear(self) -> int:
        return read_cleared(self._client.send(self._target.clear_call()))


class Asset:
    """`client.asset("orders").state.get("watermark")`."""

    def __init__(self, client: StateClient, name: str) -> None:
        self.name = name
        self.state = AssetState(client, Target(asset_name=name))


class StateClient(contextlib.AbstractContextManager["StateClient"]):
    """Task and asset state over the execution API, with the task's token. Use as a context manager."""

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 10.0, connect_retries: int = 2,
                 http: httpx.Client | None = None) -> None:
        self.token = token
        self._api = SyncExecutionApi(base_url, token, timeout_s=timeout_s, http=http,
                                     retry=connect_policy(connect_retries))

    @functools.cached_property
    def task_state(self) -> TaskState:
        return TaskState(self, Target(ti_id=own_ti_id(self.token)))

    def asset(self, asset: object) -> Asset:
        """The state of one asset: its name, an AssetRef, or an asset handle (`producers.Asset`)."""
        return Asset(self, asset_name(asset))

    def send(self, call: Call) -> httpx.Response:
        """One request through the SDK's execution-API client: a connection that could not even be opened is
        retried `connect_retries` times (nothing was sent); a write is never repeated blindly."""
        try:
            return self._api.request(call.method, call.path, repeatable=False, json=call.json, params=call.params,
                                     headers=call.headers)
        except ApiUnavailable as error:
            raise unreachable(error) from error

    def close(self) -> None:
        self._api.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


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


class AsyncStateClient(contextlib.AbstractAsyncContextManager["AsyncStateClient"]):
    """Task and asset state over the execution API, with the task's token. `async with` it."""

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 10.0, connect_retries: int = 2,
                 http: httpx.AsyncClient | None = None) -> None:
        self.token = token
        self._api = ExecutionApi(base_url, token, timeout_s=timeout_s, http=http, retry=connect_policy(connect_retries))

    @functools.cached_property
    def task_state(self) -> AsyncTaskState:
        return AsyncTaskState(self, Target(ti_id=own_ti_id(self.token)))

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

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
