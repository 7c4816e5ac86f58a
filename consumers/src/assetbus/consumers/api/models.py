"""Request and response bodies of the execution API. Unknown request fields are ignored, and
responses may gain fields: clients must ignore fields they do not know."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field

from assetbus.consumers.storage.state import StateEntry
from assetbus.schemas import KEY_MAX_LENGTH, AssetRef

VALUE_MAX_BYTES = 64 * 1024
"""Largest state value, UTF-8 encoded; a larger one is answered 413 `value_too_large`."""

BODY_MAX_BYTES = 512 * 1024
"""Largest request body (room for a JSON-escaped value at the limit); larger is 413 `body_too_large`."""

KEY_PATTERN = r"^[^\x00-\x1f\x7f/]*[^\x00-\x1f\x7f/.][^\x00-\x1f\x7f/]*$"
"""A key: no control characters or slashes, and not only dots (it is a URL path segment)."""

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


class StateValueIn(BaseModel):
    """The body of a PUT: a string value (JSON by convention)."""

    value: StorableText = Field(description=f"The value; at most {VALUE_MAX_BYTES} bytes as UTF-8.")


class StateEntryOut(BaseModel):
    """A stored value with its version (also sent as the `ETag` header)."""

    key: str = Field(description="The key.")
    value: str = Field(description="The value.")
    version: int = Field(description="Bumped by every write; send it in `If-Match` for compare-and-set.")
    updated_at: datetime = Field(description="When the value was last written.")

    @classmethod
    def of(cls, entry: StateEntry) -> StateEntryOut:
        return cls(key=entry.key, value=entry.value, version=entry.version, updated_at=entry.updated_at)


class ClearedOut(BaseModel):
    """The result of a clear."""

    deleted: int = Field(description="How many keys were deleted.")


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

