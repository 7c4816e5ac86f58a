"""The execution API's state store routes (Airflow 3.3's `/execution/store/…`), shared by the sync and
async clients: what to send, what came back.

No I/O here: `Call` describes a request; `read_*` turn an httpx.Response into a value or an error.
Values are JSON (anything `json.dumps` takes, but not None, NaN or Infinity); the version of a value
travels as its `ETag`, how many keys a DELETE removed as `Assetbus-Deleted`.
"""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from assetbus.producers.errors import InvalidEmission
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.state.errors import (
    InvalidStateRequest,
    StateConflict,
    StateError,
    StateForbidden,
    StateUnauthorized,
    StateUnavailable,
    ValueTooLarge,
)
from assetbus.producers.tokens import source_of
from assetbus.schemas import AssetRef, SourceKind, task_instance_id


@dataclass(frozen=True, slots=True)
class StateValue:
    """A stored value and its version (pass it as `if_version=` for compare-and-set)."""

    key: str
    value: Any
    """The JSON value (dict, list, str, int, float or bool)."""
    version: int
    updated_at: datetime | None = None
    """Not sent by the state store routes (Airflow's response is `{"value"}` only): None."""


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    json: dict[str, Any] | None = None


def connect_policy(retries: int) -> RetryPolicy:
    """The state clients' policy: a connection that could not be opened is tried `retries` more times."""
    return RetryPolicy(initial_s=0.2, max_s=2.0, max_attempts=retries + 1)


def own_ti_id(token: str) -> UUID:
    """The task instance id named by a task token (the server checks it against the signed claims)."""
    try:
        source = source_of(token)
    except InvalidEmission as error:  # its cause is PyJWT's or pydantic's error
        raise StateUnauthorized(f"the token cannot be read: {error.__cause__}", code="invalid_token") from error
    if source.kind is not SourceKind.TASK or source.task_id is None or source.map_index is None:
        raise StateForbidden("task state needs a task token; this one names a DAG run", code="not_a_task_token")
    return task_instance_id(source.dag_id, source.run_id, source.task_id, source.map_index)


def conditions(if_version: int | None, only_if_absent: bool = False) -> dict[str, str]:
    if if_version is not None and only_if_absent:
        raise InvalidStateRequest("pass if_version or only_if_absent, not both")
    if if_version is not None:
        return {"If-Match": f'"{int(if_version)}"'}
    return {"If-None-Match": "*"} if only_if_absent else {}


STORE = "/execution/store"


@dataclass(kw_only=True)
class Target:
    """Where a key lives: a task instance (path) or an asset (by name, in the query)."""

    ti_id: UUID | None = None
    asset_name: str | None = None

    def key_call(self, method: str, key: str, *, headers: dict[str, str] | None = None,
                 json: dict[str, Any] | None = None) -> Call:
        if not isinstance(key, str) or not key:
            raise InvalidStateRequest("key must be a non-empty string")
        if self.ti_id is not None:
            return Call(method, f"{STORE}/ti/{self.ti_id}/{quote(key, safe='')}", headers=headers or {}, json=json)
        assert self.asset_name is not None
        return Call(method, f"{STORE}/asset/by-name/value", {"name": self.asset_name, "key": key},
                    headers or {}, json)

    def clear_call(self, all_map_indices: bool = False) -> Call:
        if self.ti_id is not None:
            return Call("DELETE", f"{STORE}/ti/{self.ti_id}",
                        {"all_map_indices": "true" if all_map_indices else "false"})
        assert self.asset_name is not None
        return Call("DELETE", f"{STORE}/asset/by-name/clear", {"name": self.asset_name})

    def success_call(self) -> Call:
        assert self.ti_id is not None
        return Call("POST", f"{STORE}/ti/{self.ti_id}/on-success")

    def set_body(self, value: Any, expires_at: datetime | None = None) -> dict[str, Any]:
        """The body of a PUT: the JSON `value`, and for task state an optional time-zone-aware expiry."""
        if value is None:
            raise InvalidStateRequest("a value cannot be None (delete the key instead)")
        try:
            jsonlib.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidStateRequest(f"the value is not JSON (no NaN or Infinity either): {error}") from error
        if expires_at is None:
            return {"value": value}
        if self.ti_id is None:
            raise InvalidStateRequest("asset state has no expiry (as in Airflow 3.3)")
        if expires_at.tzinfo is None or expires_at.utcoffset() is None:
            raise InvalidStateRequest("expires_at must be time-zone aware")
        return {"value": value, "expires_at": expires_at.isoformat()}


def _reason(body: Any) -> tuple[str | None, str | None, dict[str, Any]]:
    """(reason, message, detail) of an error body: `{"detail": {"reason", "message"}}` on the store routes."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        detail = body if isinstance(body, dict) else {}
        reason = detail.get("code")
    else:
        reason = detail.get("reason")
    message = detail.get("message")
    return (reason if isinstance(reason, str) else None, message if isinstance(message, str) else None, detail)


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return {}


_BY_STATUS: dict[int, type[StateError]] = {401: StateUnauthorized, 403: StateForbidden, 413: ValueTooLarge,
                                           400: InvalidStateRequest, 422: InvalidStateRequest}


def _error(response: httpx.Response) -> StateError:
    code, text, detail = _reason(_body(response))
    message = f"{response.status_code} {code or response.reason_phrase}: {text or response.text[:200]}"
    status = response.status_code
    if status == 412:
        current = detail.get("current_version")
        return StateConflict(message, current_version=current if isinstance(current, int) else None, code=code)
    kind = _BY_STATUS.get(status, StateUnavailable if status >= 500 else StateError)
    if code == "value_too_large" and kind not in (StateUnauthorized, StateForbidden):
        kind = ValueTooLarge
    return kind(message, status=status, code=code, retriable=kind is StateUnavailable)


def _version(response: httpx.Response) -> int:
    tag = response.headers.get("ETag", "").removeprefix("W/").strip('"')
    return int(tag) if tag.isdigit() else 0


def read_entry(response: httpx.Response, key: str) -> StateValue | None:
    """A GET: the value with its version, or None if the key has none."""
    if response.status_code == 404 and _reason(_body(response))[0] == "not_found":
        return None
    if response.status_code != 200:
        raise _error(response)
    return StateValue(key=key, value=response.json()["value"], version=_version(response))


def read_written(response: httpx.Response, key: str, value: Any) -> StateValue:
    """A PUT (204): what was written, with its new version."""
    if response.status_code not in (200, 204):
        raise _error(response)
    return StateValue(key=key, value=value, version=_version(response))


def read_deleted(response: httpx.Response) -> bool:
    """A DELETE (204, also of an absent key): whether a value was there."""
    return read_cleared(response) > 0


def read_cleared(response: httpx.Response) -> int:
    """A clear (204): how many keys were deleted."""
    if response.status_code != 204:
        raise _error(response)
    count = response.headers.get("Assetbus-Deleted", "")
    return int(count) if count.isdigit() else 0


def unreachable(error: Exception) -> StateUnavailable:
    return StateUnavailable(f"the execution API cannot be reached: {error}", retriable=True)


def asset_name(asset: object) -> str:
    """The registered name of `asset`: a name, an AssetRef, or an asset handle (anything with `.ref`)."""
    if isinstance(asset, str):
        return asset
    ref = asset if isinstance(asset, AssetRef) else getattr(asset, "ref", None)
    if not isinstance(ref, AssetRef):
        raise TypeError(f"an asset is a name, an AssetRef or an asset handle, not {type(asset).__name__}")
    return ref.name
