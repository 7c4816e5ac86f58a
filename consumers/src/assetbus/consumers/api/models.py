"""Request and response bodies of the execution API. Responses may gain fields: clients must ignore
fields they do not know. The state store's bodies are strict as in Airflow 3.3 (an unknown field is
refused); the emit body ignores unknown fields."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, JsonValue

from assetbus.schemas import KEY_MAX_LENGTH, AssetRef

VALUE_MAX_BYTES = 65535
"""Largest state value as Airflow 3.3 measures it (`[state_store] max_value_storage_bytes`, 64 KiB - 1):
the length of `json.dumps(value)`. A larger one is answered 422 `value_too_large`."""

BODY_MAX_BYTES = 512 * 1024
"""Largest request body (room for a JSON-escaped value at the limit); larger is 413 `body_too_large`."""

KEY_PATTERN = r"^[^\x00-\x1f\x7f]*[^\x00-\x1f\x7f/.][^\x00-\x1f\x7f]*$"
"""A key: no control characters, and not only dots and slashes (slashes are allowed, as Airflow's
`{key:path}`; a client sends them percent-encoded)."""

NAME_PATTERN = r"^[^\x00]+$"
"""An asset name: anything but NUL (PostgreSQL text cannot hold it)."""


def _storable(text: str) -> str:
    """PostgreSQL text holds neither NUL nor lone surrogates (which JSON escapes can carry)."""
    if "\x00" in text:
        raise ValueError("may not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError("is not valid Unicode (lone surrogate)") from error
    return text


StorableText = Annotated[str, AfterValidator(_storable)]


def _unstorable(value: Any) -> str | None:
    """Why PostgreSQL's jsonb cannot hold `value` (a NUL or a lone surrogate in a string), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                _storable(item)
            except ValueError as error:
                return f"strings {error}"
    return None


def encoded_value(value: Any) -> str | tuple[str, str]:
    """`value` as the JSON text that is measured and stored (encoded once, for both), or (reason, message)
    if it may not be stored. Airflow 3.3's rules (null refused; NaN and Infinity refused anywhere; at most
    VALUE_MAX_BYTES characters of `json.dumps`), plus what jsonb cannot hold. Shared by the API and the
    `assetbus state` CLI."""
    if value is None:
        return "invalid_request", "value: cannot be null (delete the key instead)"
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError:
        return "invalid_request", "value: NaN and Infinity are not JSON representable"
    except TypeError as error:
        return "invalid_request", f"value: not JSON ({error})"
    if len(text) > VALUE_MAX_BYTES:
        return ("value_too_large", f"the value is {len(text)} bytes as JSON; the limit is {VALUE_MAX_BYTES} "
                "(store references, not data)")
    reason = _unstorable(value)
    return ("invalid_request", f"value: {reason}") if reason is not None else text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AssetStoreValueIn(_Strict):
    """The body of an asset PUT (Airflow's `AssetStateStorePutBody`): a JSON value, not null."""

    value: JsonValue = Field(description=f"Any JSON value but null; at most {VALUE_MAX_BYTES} characters "
                             "as `json.dumps` writes it; no NaN or Infinity.")


class TaskStoreValueIn(AssetStoreValueIn):
    """The body of a task PUT (Airflow's `TaskStateStorePutBody`): a JSON value and an optional expiry."""

    expires_at: AwareDatetime | None = Field(default=None, description="When the retention cleanup may "
                                             "delete the key (time-zone aware); null: never. A write replaces it.")


class StoreValueOut(_Strict):
    """A stored value (Airflow's `TaskStateStoreResponse`); its version is the `ETag` header."""

    value: JsonValue = Field(description="The JSON value.")


class EmitRequest(BaseModel):
    """An emission over HTTP: the same fields and rules as `emit()`; provenance comes from the token."""

    asset: AssetRef = Field(description="The registered asset (name and URI must both match).")
    extra: dict[str, Any] = Field(default_factory=dict,
                                  description="JSON object of references (paths, counts), at most 64 KiB.")
    partition_key: StorableText | None = Field(default=None, min_length=1, max_length=KEY_MAX_LENGTH,
                                               description="Partition that is ready; null for unpartitioned.")
    partition_date: datetime | None = Field(default=None,
                                            description="Time-zone-aware date of the partition; needs a key.")
    dedupe_key: StorableText | None = Field(default=None, min_length=1, max_length=KEY_MAX_LENGTH,
                                            description="Explicit dedupe key, scoped to (asset, dag, run, task, "
                                            "map index); null means the command id.")
    command_id: UUID | None = Field(default=None,
                                    description="Optional client-chosen command id; resend the same one when "
                                    "retrying a timed-out request so that it cannot create a second event.")

