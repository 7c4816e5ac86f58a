"""assetbus as Airflow 3.3's state store backend (`[state_store] backend`, a `BaseStoreBackend`).

Runs in Airflow's api-server and keeps task and asset state in assetbus, over its execution API
(`ASSETBUS_API_URL`), as the task instance each scope names or the calling task (`store_tokens`,
`store_assets`); docs/airflow.md, "State store backend", says how each call maps and what is refused.
Importable without Airflow (for tests): the base class is then `object`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import httpx

from assetbus.producers.airflow.attestation import (
    ATTESTATION_KEY,
    AttemptLookup,
    AttestationRefused,
    Attestor,
    airflow_attempt,
)
from assetbus.producers.airflow.connection import DEFAULT_API_URL, ENV_API_URL
from assetbus.producers.airflow.runtime import AirflowVersionMismatch, installed_versions, mismatch
from assetbus.producers.airflow.store_assets import (
    AssetLookup,
    AssetScopeLike,
    CallerLookup,
    airflow_asset_lookup,
    airflow_calling_task,
    calling_task_instance_id,
)
from assetbus.producers.airflow.store_tokens import (
    MissingSigningKey,
    StateTokens,
    TaskIdentity,
    signing_key_from_env,
)
from assetbus.producers.secret_files import SecretFileError, expand_file_variables
from assetbus.producers.state import (
    AssetState,
    AsyncAssetState,
    AsyncStateClient,
    AsyncTaskState,
    InvalidStateRequest,
    StateClient,
    StateError,
    StateForbidden,
    StateValue,
    TaskState,
)
from assetbus.producers.tokens import TokenKey

if TYPE_CHECKING:
    BaseStoreBackend = object
else:
    try:
        from airflow.state import BaseStoreBackend  # public since Airflow 3.3
    except ImportError as error:
        if "apache-airflow-core" in installed_versions():  # Airflow's api-server, without the state store
            raise AirflowVersionMismatch(mismatch(installed_versions()) or
                                         f"this Airflow has no airflow.state.BaseStoreBackend: {error}") from error
        BaseStoreBackend = object  # no Airflow core here (a worker, the SDK alone, tests): Airflow never loads it

ASSET_STATE_RUN_ID = "assetbus-asset-state"
"""The run id the backend's asset-state tokens name under the opt-in rule (it acts for no run)."""

ENV_ASSET_STATE = "ASSETBUS_STORE_ASSET_STATE"
"""`caller` (the default): asset state only for the identified calling task, if registered with the asset.
`declared`: when the caller cannot be identified, act as a task that declares the asset (Airflow's rule,
narrowed to declared assets)."""
AssetStateRule = Literal["caller", "declared"]
T = TypeVar("T")
S = TypeVar("S")


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


def _writable(key: str) -> None:
    if key == ATTESTATION_KEY:
        raise _refused(StateForbidden(f"{key!r} is reserved: reading it asks for the task's assetbus token",
                                      status=403, code="reserved_key"))


def _known(scope: object, state: S | None) -> S:
    if state is None:
        raise _refused(StateError(f"Airflow knows no asset for {scope!r}", status=404, code="not_found"))
    return state


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
    """Airflow's task and asset state, kept in assetbus. Airflow builds it with no arguments: the API URL
    and the signing key come from the environment (`ASSETBUS_API_URL`, `store_tokens.signing_key_from_env`)."""

    def __init__(self, api_url: str | None = None, signing_key: TokenKey | None = None, *,
                 asset_lookup: AssetLookup = airflow_asset_lookup, caller: CallerLookup = airflow_calling_task,
                 timeout_s: float = 10.0, attempts: AttemptLookup = airflow_attempt) -> None:
        rule = os.environ.get(ENV_ASSET_STATE, "caller").strip() or "caller"
        if rule not in ("caller", "declared"):
            raise ValueError(f"{ENV_ASSET_STATE}={rule!r}: expected 'caller' (the default) or 'declared'")
        self.asset_state: AssetStateRule = cast(AssetStateRule, rule)
        self._caller = caller
        self.api_url = api_url or os.environ.get(ENV_API_URL, DEFAULT_API_URL)
        self._asset_lookup = asset_lookup
        self._timeout_s = timeout_s
        self._http = httpx.Client(base_url=self.api_url, timeout=timeout_s)
        try:
            if signing_key is None:
                expand_file_variables()  # ASSETBUS_TOKEN_SECRET_FILE and the like, in the api-server
            key = signing_key if signing_key is not None else signing_key_from_env()
        except (MissingSigningKey, SecretFileError) as error:  # every call says so (503), rather than a 500 for each
            self.cannot_mint: str | None = str(error)
            key = "no signing key"
        else:
            self.cannot_mint = None
        self._state_tokens = StateTokens(key)
        self._attestor = Attestor(key, self.api_url, http=self._http, lookup=attempts,
                                  calling=calling_task_instance_id)

    @property
    def _tokens(self) -> StateTokens:
        if self.cannot_mint is not None:
            raise _refused(StateError(self.cannot_mint, status=503, code="backend_cannot_mint"))
        return self._state_tokens

    def close(self) -> None:
        self._http.close()

    # -- where a scope lives, and as whom ------------------------------------------------------------

    def _asset_actor(self, scope: AssetScopeLike, session: Any | None) -> tuple[str, TaskIdentity] | None:
        """The asset's name and the task instance the backend acts as for it (None: Airflow knows no such asset)."""
        access = self._asset_lookup(scope, session)
        if access is None:
            return None
        caller = self._caller(session)
        if caller is not None:
            return access.name, caller
        if self.asset_state != "declared":
            raise _refused(StateForbidden(
                f"the task asking for asset {access.name!r}'s state is not known here: Airflow's execution API "
                "does not pass it to a state store backend. Install assetbus's StateCallerMiddleware in the "
                "api-server (docs/airflow.md, State store backend), or use assetbus's asset-state API with the "
                f"task's assetbus token; {ENV_ASSET_STATE}=declared opts into Airflow's looser rule",
                status=403, code="caller_not_identified"))
        if not access.task_id:
            raise _refused(StateForbidden(
                f"no Airflow task declares asset {access.name!r} as inlet or outlet, and assetbus opens asset "
                "state only to tasks registered with the asset (`assetbus airflow sync`)",
                status=403, code="asset_not_registered"))
        return access.name, (access.dag_id, ASSET_STATE_RUN_ID, access.task_id, -1)

    async def _off_loop(self, call: Callable[[Any | None], T], session: Any | None) -> T:
        """`call` with an async session's sync session (`run_sync`), else in a thread with none (it opens one)."""
        if session is not None and hasattr(session, "run_sync"):
            result: T = await session.run_sync(call)
            return result
        return await asyncio.to_thread(call, None)

    def _client(self, identity: TaskIdentity) -> StateClient:
        return StateClient(self.api_url, self._tokens.for_task(identity), http=self._http)

    @contextmanager
    def _state(self, scope: Any, session: Any | None) -> Iterator[TaskState | AssetState | None]:
        """The state `scope` names, as the task the backend acts as for it (None: Airflow knows no such asset);
        an assetbus refusal in the block is raised in Airflow's shape."""
        try:
            if _is_task(scope):
                yield self._client(_identity(scope)).task_state
            else:
                actor = self._asset_actor(scope, session)
                yield None if actor is None else self._client(actor[1]).asset(actor[0]).state
        except StateError as error:
            raise _refused(error) from error

    @asynccontextmanager
    async def _astate(self, scope: Any, session: Any | None
                      ) -> AsyncIterator[AsyncTaskState | AsyncAssetState | None]:
        """`_state` with an async client, closed after the block."""
        try:
            if _is_task(scope):
                name, who = None, _identity(scope)
            else:
                actor = await self._off_loop(lambda sync: self._asset_actor(scope, sync), session)
                if actor is None:
                    yield None
                    return
                name, who = actor
            async with AsyncStateClient(self.api_url, self._tokens.for_task(who), timeout_s=self._timeout_s) as client:
                yield client.task_state if name is None else client.asset(name).state
        except StateError as error:
            raise _refused(error) from error

    # -- BaseStoreBackend --------------------------------------------------------------------------

    def _attested(self, scope: Any, session: Any | None) -> str:
        """The reserved key's read: the calling task's emission token (attestation.py)."""
        if self.cannot_mint is not None:
            raise _refused(StateError(self.cannot_mint, status=503, code="backend_cannot_mint"))
        try:
            return json.dumps(self._attestor.token(scope, session))  # the JSON document Airflow hands the task
        except AttestationRefused as error:
            raise _refused(StateError(str(error), status=error.status, code=error.code)) from error

    def get(self, scope: Any, key: str, *, session: Any | None = None) -> str | None:
        if key == ATTESTATION_KEY and _is_task(scope):
            return self._attested(scope, session)
        with self._state(scope, session) as state:
            return None if state is None else _encoded(state.get_entry(key))

    def set(self, scope: Any, key: str, value: str, *, expires_at: datetime | None = None,
            session: Any | None = None) -> None:
        _writable(key)
        with self._state(scope, session) as state:
            _known(scope, state).set(key, _decoded(value), expires_at=expires_at if _is_task(scope) else None)

    def delete(self, scope: Any, key: str, *, session: Any | None = None) -> None:
        _writable(key)
        with self._state(scope, session) as state:
            if state is not None:
                state.delete(key)

    def clear(self, scope: Any, *, all_map_indices: bool = False, session: Any | None = None) -> None:
        with self._state(scope, session) as state:
            if isinstance(state, TaskState):
                state.clear(all_map_indices=all_map_indices)
            elif state is not None:
                state.clear()

    async def aget(self, scope: Any, key: str, *, session: Any | None = None) -> str | None:
        if key == ATTESTATION_KEY and _is_task(scope):
            return await self._off_loop(lambda sync: self._attested(scope, sync), session)
        async with self._astate(scope, session) as state:
            return None if state is None else _encoded(await state.get_entry(key))

    async def aset(self, scope: Any, key: str, value: str, *, expires_at: datetime | None = None,
                   session: Any | None = None) -> None:
        _writable(key)
        async with self._astate(scope, session) as state:
            await _known(scope, state).set(key, _decoded(value), expires_at=expires_at if _is_task(scope) else None)

    async def adelete(self, scope: Any, key: str, *, session: Any | None = None) -> None:
        _writable(key)
        async with self._astate(scope, session) as state:
            if state is not None:
                await state.delete(key)

    async def aclear(self, scope: Any, *, all_map_indices: bool = False, session: Any | None = None) -> None:
        async with self._astate(scope, session) as state:
            if isinstance(state, AsyncTaskState):
                await state.clear(all_map_indices=all_map_indices)
            elif state is not None:
                await state.clear()

    def cleanup(self) -> None:
        """Nothing to do here: the assetbus API deletes expired task state itself, periodically
        (`ASSETBUS_API_STATE_CLEANUP_INTERVAL_S`), as does `assetbus state cleanup`; Airflow 3.3.2's
        `airflow state-store clean` skips custom backends anyway."""


__all__ = ["ASSET_STATE_RUN_ID", "ENV_ASSET_STATE", "AssetbusStoreBackend"]
