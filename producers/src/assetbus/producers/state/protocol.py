"""The execution API's state routes, shared by the sync and async clients: what to send, what came back.

No I/O here: `Call` describes a request; `read_*` turn an httpx.Response into a value or an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx
import jwt
from pydantic import ValidationError

from assetbus.producers.state.errors import (
    InvalidStateRequest,
    StateConflict,
    StateError,
    StateForbidden,
    StateUnauthorized,
    StateUnavailable,
    ValueTooLarge,
)
from assetbus.schemas import AssetRef, Provenance, SourceKind, task_instance_id

API_VERSION = "2026-11-29"
"""The API version this client was written for (sent as `Assetbus-API-Version`)."""


@dataclass(frozen=True, slots=True)
class StateValue:
    """A stored value and its version (pass it as `if_version=` for compare-and-set)."""

    key: str
    value: str
    version: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    json: dict[str, Any] | None = None


def default_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Assetbus-API-Version": API_VERSION}


def request_kwargs(call: Call, token: str) -> dict[str, Any]:
    """The keyword arguments of `httpx.(Async)Client.request` for `call`, sent with `token`."""
    kwargs: dict[str, Any] = {"params": call.params, "headers": {**default_headers(token), **call.headers}}
    if call.json is not None:
        kwargs["json"] = call.json
    return kwargs


def retry_delay(error: httpx.HTTPError, attempt: int, retries: int) -> float:
    """Seconds to wait before trying again after `error` on attempt `attempt` (0-based): only a
    connection that could not be opened is retried, `retries` times; otherwise StateUnavailable."""
    if isinstance(error, httpx.ConnectError) and attempt < retries:
        return 0.2 * 2.0**attempt
    raise unreachable(error) from error


def own_ti_id(token: str) -> UUID:
    """The task instance id named by a task token (the server checks it against the signed claims)."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
        source = Provenance.model_validate({name: claims.get(name) for name in Provenance.model_fields})
    except (jwt.PyJWTError, ValidationError) as error:
        raise StateUnauthorized(f"the token cannot be read: {error}", code="invalid_token") from error
    if source.kind is not SourceKind.TASK or source.task_id is None or source.map_index is None:
        raise StateForbidden("task state needs a task token; this one names a DAG run", code="not_a_task_token")
    return task_instance_id(source.dag_id, source.run_id, source.task_id, source.map_index)


def conditions(if_version: int | None, only_if_absent: bool = False) -> dict[str, str]:
    if if_version is not None and only_if_absent:
        raise InvalidStateRequest("pass if_version or only_if_absent, not both")
    if if_version is not None:
        return {"If-Match": f'"{int(if_version)}"'}
    return {"If-None-Match": "*"} if only_if_absent else {}


class Target:
    """Where a key lives: a task instance (path) or an asset (query)."""

    def __init__(self, *, ti_id: UUID | None = None, asset_name: str | None = None) -> None:
        self.ti_id = ti_id
        self.asset_name = asset_name

    def key_call(self, method: str, key: str, *, headers: dict[str, str] | None = None,
                 json: dict[str, Any] | None = None) -> Call:
        if not isinstance(key, str) or not key:
            raise InvalidStateRequest("key must be a non-empty string")
        if self.ti_id is not None:
            return Call(method, f"/execution/state/ti/{self.ti_id}/{quote(key, safe='')}", headers=headers or {},
                        json=json)
        assert self.asset_name is not None
        return Call(method, "/execution/state/asset/value", {"name": self.asset_name, "key": key},
                    headers or {}, json)

    def clear_call(self, all_map_indices: bool = False) -> Call:
        if self.ti_id is not None:
            return Call("DELETE", f"/execution/state/ti/{self.ti_id}",
                        {"all_map_indices": "true" if all_map_indices else "false"})
        assert self.asset_name is not None
        return Call("DELETE", "/execution/state/asset/clear", {"name": self.asset_name})


def set_body(value: str) -> dict[str, Any]:
    if not isinstance(value, str):
        raise InvalidStateRequest(f"values are strings (JSON by convention), not {type(value).__name__}")
    return {"value": value}


def _error(response: httpx.Response) -> StateError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    code = body.get("code") if isinstance(body.get("code"), str) else None
    message = f"{response.status_code} {code or response.reason_phrase}: {body.get('message', response.text[:200])}"
    status = response.status_code
    if status == 401:
        return StateUnauthorized(message, status=status, code=code)
    if status == 403:
        return StateForbidden(message, status=status, code=code)
    if status == 412:
        current = body.get("current_version")
        return StateConflict(message, current_version=current if isinstance(current, int) else None, code=code)
    if status == 413:
        return ValueTooLarge(message, status=status, code=code)
    if status in (400, 422):
        return InvalidStateRequest(message, status=status, code=code)
    if status >= 500:
        return StateUnavailable(message, status=status, code=code, retriable=True)
    return StateError(message, status=status, code=code)


def _value(response: httpx.Response) -> StateValue:
    body = response.json()
    return StateValue(key=body["key"], value=body["value"], version=int(body["version"]),
                      updated_at=datetime.fromisoformat(body["updated_at"]))


def read_entry(response: httpx.Response, *, missing_ok: bool) -> StateValue | None:
    if response.status_code == 404 and missing_ok and _code(response) == "key_not_found":
        return None
    if response.status_code != 200:
        raise _error(response)
    return _value(response)


def read_deleted(response: httpx.Response) -> bool:
    if response.status_code == 204:
        return True
    if response.status_code == 404 and _code(response) == "key_not_found":
        return False
    raise _error(response)


def read_cleared(response: httpx.Response) -> int:
    if response.status_code != 200:
        raise _error(response)
    return int(response.json()["deleted"])


def _code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("code") if isinstance(body, dict) else None


def unreachable(error: httpx.HTTPError) -> StateUnavailable:
    return StateUnavailable(f"the execution API cannot be reached: {type(error).__name__}: {error}", retriable=True)


def asset_name(asset: object) -> str:
    """The registered name of `asset`: a name, an AssetRef, or an asset handle (anything with `.ref`)."""
    if isinstance(asset, str):
        return asset
    ref = asset if isinstance(asset, AssetRef) else getattr(asset, "ref", None)
    if not isinstance(ref, AssetRef):
        raise TypeError(f"an asset is a name, an AssetRef or an asset handle, not {type(asset).__name__}")
    return ref.name
