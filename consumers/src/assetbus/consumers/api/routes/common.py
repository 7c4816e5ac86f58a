"""Parameters and checks shared by the state routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query, Response

from assetbus.consumers.api.errors import ApiError, ApiErrorCode, etag
from assetbus.consumers.api.models import KEY_PATTERN, NAME_PATTERN, VALUE_MAX_BYTES, StateEntryOut
from assetbus.consumers.storage.state import StateEntry
from assetbus.schemas import KEY_MAX_LENGTH, NAME_MAX_LENGTH

_KEY_DOC = f"State key: 1 to {KEY_MAX_LENGTH} characters, no control characters or slashes, not only dots."

PathKey = Annotated[str, Path(min_length=1, max_length=KEY_MAX_LENGTH, pattern=KEY_PATTERN, description=_KEY_DOC)]
QueryKey = Annotated[str, Query(min_length=1, max_length=KEY_MAX_LENGTH, pattern=KEY_PATTERN, description=_KEY_DOC)]
AssetName = Annotated[str, Query(min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN,
                                 description="Registered asset name.")]


def check_value_size(value: str) -> None:
    size = len(value.encode("utf-8"))
    if size > VALUE_MAX_BYTES:
        raise ApiError(413, ApiErrorCode.VALUE_TOO_LARGE,
                       f"the value is {size} bytes; the limit is {VALUE_MAX_BYTES} (store references, not data)")


def key_not_found(message: str) -> ApiError:
    return ApiError(404, ApiErrorCode.KEY_NOT_FOUND, message)


def entry_response(entry: StateEntry, response: Response) -> StateEntryOut:
    """The body of a stored value, with its version as the ETag header."""
    response.headers["ETag"] = etag(entry.version)
    return StateEntryOut.of(entry)
