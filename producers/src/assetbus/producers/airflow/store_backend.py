"""assetbus as Airflow 3.3's state store backend (`[state_store] backend`, a `BaseStoreBackend`).

    [state_store]
    backend = assetbus.producers.airflow.store_backend.AssetbusStoreBackend

Airflow's API server calls the backend for every task and asset state request of its execution API
(`TaskScope(dag_id, run_id, task_id, map_index)`, `AssetScope(asset_id)`). The backend keeps the value in
assetbus, over assetbus's execution API (`ASSETBUS_API_URL`), with a short-lived `ti:self` token it mints
per task instance (`store_tokens`). Asset scopes are resolved to the asset's name, and to a task that
declares it, from Airflow's metadata DB (`store_assets`). Airflow's values are JSON strings: assetbus
stores the JSON they encode (so its API, CLI and UI show it) and the backend gives Airflow back the
same string (`json.dumps` of what `json.dumps` wrote). Task state keeps Airflow's `expires_at`; the
assetbus API's retention cleanup deletes expired keys. An assetbus refusal reaches the task as the same
status with Airflow's error shape (`{"detail": {"reason", "message"}}`), not as a 500.

Importable without Airflow (for tests): the base class and the scopes are then stand-ins.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx

from assetbus.producers.airflow.connection import DEFAULT_API_URL, ENV_API_URL
from assetbus.producers.airflow.store_assets import AssetAccess, AssetLookup, AssetScopeLike, airflow_asset_lookup
from assetbus.producers.airflow.store_tokens import DEFAULT_TTL_S, StateTokens, TaskIdentity, signing_key_from_env
from assetbus.producers.state import (
    AsyncStateClient,
    InvalidStateRequest,
    StateClient,
    StateError,
    StateForbidden,
    StateValue,
)
from assetbus.producers.tokens import TokenKey

if TYPE_CHECKING:
    BaseStoreBackend = object
else:
    try:
        from airflow._shared.state import BaseStoreBackend
    except ImportError:  # no Airflow here: the module still imports (unit tests, the SDK alone)
        BaseStoreBackend = object

ASSET_STATE_RUN_ID = "assetbus-asset-state"
"""The run id the backend's asset-state tokens name (Airflow's asset scopes have no run)."""


@dataclass(frozen=True)
class TaskScope:
    """Stand-in for `airflow._shared.state.TaskScope` where Airflow is not installed (same fields)."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1


@dataclass(frozen=True)
class AssetScope:
    """Stand-in for `airflow._shared.state.AssetScope` where Airflow is not installed (same fields)."""

    asset_id: int | None = None
    name: str | None = None
    uri: str | None = None


def _is_task(scope: object) -> bool:
    return hasattr(scope, "task_id")


def _identity(scope: Any) -> TaskIdentity:
    return scope.dag_id, scope.run_id, scope.task_id, int(scope.map_index)


def _decoded(value: str) -> Any:
    """The JSON Airflow encoded (it always passes `json.dumps(...)`)."""
    try:
        return json.loads(value)
    except (TypeError, ValueError) as error:
        raise _refused(InvalidStateRequest(f"the value is not a JSON document: {error}", status=422,
                                           code="invalid_value")) from error


def _encoded(entry: StateValue | None) -> str | None:
    """What Airflow's `get` returns: the JSON document, or None for an absent key."""
    return None if entry is None else json.dumps(entry.value)


def _refused(error: StateError) -> Exception:
    """Inside Airflow's API server, the refusal as an HTTP error in Airflow's shape; elsewhere, `error`."""
    try:
        from fastapi import HTTPException
    except ImportError:
        return error
    status = error.status if error.status and error.status < 500 else 503
    return HTTPException(status_code=status, detail={"reason": error.code or "assetbus_state_error",
                                                     "message": f"assetbus state store: {error}"})


class AssetbusStoreBackend(BaseStoreBackend):
    """Airflow's task and asset state, kept in assetbus. Airflow builds it with no arguments: the
    API URL and the signing key come from the environment (see the module docstring)."""

    def __init__(self, api_url: str | None = None, signing_key: TokenKey | None = None, *,
                 asset_lookup: AssetLookup = airflow_asset_lookup, token_ttl_s: int = DEFAULT_TTL_S,
                 timeout_s: float = 10.0) -> None:
        self.api_url = api_url or os.environ.get(ENV_API_URL, DEFAULT_API_URL)
        self._tokens = StateTokens(signing_key if signing_key is not None else signing_key_from_env(),
                                   ttl_s=token_ttl_s)
        self._asset_lookup = asset_lookup
        self._timeout_s = timeout_s
        self._http = httpx.Client(base_url=self.api_url, timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    # -- where a scope lives, and as whom ------------------------------------------------------------

    def _asset_access(self, scope: AssetScopeLike, session: Any | None) -> AssetAccess | None:
        access = self._asset_lookup(scope, session)
        if access is not None and not access.task_id:
            raise _refused(StateForbidden(
                f"no Airflow task declares asset {access.name!r} as inlet or outlet, and assetbus opens asset "
                "state only to tasks registered with the asset (`assetbus airflow sync`)",
                status=403, code="asset_not_registered"))
        return access

    async def _aasset_access(self, scope: AssetScopeLike, session: Any | None) -> AssetAccess | None:
        if session is not None and hasattr(session, "run_sync"):
            access: AssetAccess | None = await session.run_sync(lambda sync: self._asset_access(scope, sync))
            return access
        return await asyncio.to_thread(self._asset_access, scope, None)

    def _client(self, identity: TaskIdentity) -> StateClient:
        return StateClient(self.api_url, self._tokens.for_task(identity), http=self._http)

    def _aclient(self, identity: TaskIdentity) -> AsyncStateClient:
        return AsyncStateClient(self.api_url, self._tokens.for_task(identity), timeout_s=self._timeout_s)

    @staticmethod
    def _acting_as(access: AssetAccess) -> TaskIdentity:
        return access.dag_id, ASSET_STATE_RUN_ID, access.task_id, -1

    # -- BaseStoreBackend --------------------------------------------------------------------------

    def get(self, scope: Any, key: str, *, session: Any | None = None) -> str | None:
        try:
            if _is_task(scope):
                return _encoded(self._client(_identity(scope)).task_state.get_entry(key))
            access = self._asset_access(scope, session)
            if access is None:
                return None
            return _encoded(self._client(self._acting_as(access)).asset(access.name).state.get_entry(key))
        except StateError as error:
            raise _refused(error) from error

    def set(self, scope: Any, key: str, value: str, *, expires_at: datetime | None = None,
            session: Any | None = None) -> None:
        try:
            if _is_task(scope):
                self._client(_identity(scope)).task_state.set(key, _decoded(value), expires_at=expires_at)
                return
            access = self._require(scope, self._asset_access(scope, session))
            self._client(self._acting_as(access)).asset(access.name).state.set(key, _decoded(value))
        except StateError as error:
            raise _refused(error) from error

    def delete(self, scope: Any, key: str, *, session: Any | None = None) -> None:
        try:
            if _is_task(scope):
                self._client(_identity(scope)).task_state.delete(key)
                return
            access = self._asset_access(scope, session)
            if access is not None:
                self._client(self._acting_as(access)).asset(access.name).state.delete(key)
        except StateError as error:
            raise _refused(error) from error

    def clear(self, scope: Any, *, all_map_indices: bool = False, session: Any | None = None) -> None:
        try:
            if _is_task(scope):
                self._client(_identity(scope)).task_state.clear(all_map_indices=all_map_indices)
                return
            access = self._asset_access(scope, session)
            if access is not None:
                self._client(self._acting_as(access)).asset(access.name).state.clear()
        except StateError as error:
            raise _refused(error) from error

    async def aget(self, scope: Any, key: str, *, session: Any | None = None) -> str | None:
        try:
            if _is_task(scope):
                async with self._aclient(_identity(scope)) as client:
                    return _encoded(await client.task_state.get_entry(key))
            access = await self._aasset_access(scope, session)
            if access is None:
                return None
            async with self._aclient(self._acting_as(access)) as client:
                return _encoded(await client.asset(access.name).state.get_entry(key))
        except StateError as error:
            raise _refused(error) from error

    async def aset(self, scope: Any, key: str, value: str, *, expires_at: datetime | None = None,
                   session: Any | None = None) -> None:
        try:
            if _is_task(scope):
                async with self._aclient(_identity(scope)) as client:
                    await client.task_state.set(key, _decoded(value), expires_at=expires_at)
                return
            access = self._require(scope, await self._aasset_access(scope, session))
            async with self._aclient(self._acting_as(access)) as client:
                await client.asset(access.name).state.set(key, _decoded(value))
        except StateError as error:
            raise _refused(error) from error

    async def adelete(self, scope: Any, key: str, *, session: Any | None = None) -> None:
        try:
            if _is_task(scope):
                async with self._aclient(_identity(scope)) as client:
                    await client.task_state.delete(key)
                return
            access = await self._aasset_access(scope, session)
            if access is not None:
                async with self._aclient(self._acting_as(access)) as client:
                    await client.asset(access.name).state.delete(key)
        except StateError as error:
            raise _refused(error) from error

    async def aclear(self, scope: Any, *, all_map_indices: bool = False, session: Any | None = None) -> None:
        try:
            if _is_task(scope):
                async with self._aclient(_identity(scope)) as client:
                    await client.task_state.clear(all_map_indices=all_map_indices)
                return
            access = await self._aasset_access(scope, session)
            if access is not None:
                async with self._aclient(self._acting_as(access)) as client:
                    await client.asset(access.name).state.clear()
        except StateError as error:
            raise _refused(error) from error

    def cleanup(self) -> None:
        """Nothing to do here: the assetbus API deletes expired task state itself, periodically
        (`ASSETBUS_API_STATE_CLEANUP_INTERVAL_S`), as does `assetbus state cleanup`; Airflow 3.3.2's
        `airflow state-store clean` skips custom backends anyway."""

    @staticmethod
    def _require(scope: object, access: AssetAccess | None) -> AssetAccess:
        if access is None:
            raise _refused(StateError(f"Airflow knows no asset for {scope!r}", status=404, code="not_found"))
        return access


__all__ = ["ASSET_STATE_RUN_ID", "AssetScope", "AssetbusStoreBackend", "TaskScope"]
