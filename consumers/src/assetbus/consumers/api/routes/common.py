"""Parameters and checks shared by the state store routes."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Path, Query, Response
from fastapi.responses import JSONResponse

from assetbus.consumers.api.errors import ApiError, etag
from assetbus.consumers.api.models import KEY_PATTERN, NAME_PATTERN, encoded_value
from assetbus.consumers.storage.state import RawValue
from assetbus.schemas import KEY_MAX_LENGTH, NAME_MAX_LENGTH

_KEY_DOC = (f"State key: 1 to {KEY_MAX_LENGTH} characters, no control characters, not only dots and slashes "
            "(a slash is sent percent-encoded, `%2F`).")

PathKey = Annotated[str, Path(min_length=1, max_length=KEY_MAX_LENGTH, pattern=KEY_PATTERN, description=_KEY_DOC)]
QueryKey = Annotated[str, Query(min_length=1, max_length=KEY_MAX_LENGTH, pattern=KEY_PATTERN, description=_KEY_DOC)]
AssetName = Annotated[str, Query(min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN,
                                 description="Registered asset name.")]
AssetUri = Annotated[str, Query(min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN,
                                description="Registered asset URI.")]

DELETED_HEADER = "Assetbus-Deleted"
"""Sent by a DELETE or a clear (which answer 204 with no body): how many keys were deleted."""


def check_value(value: Any) -> str:
    """`value` as the JSON text to store; 422 (`invalid_request` or `value_too_large`) unless it may be
    stored (`encoded_value`)."""
    checked = encoded_value(value)
    if isinstance(checked, tuple):
        raise ApiError(422, *checked)
    return checked


def stored_value_response(found: RawValue) -> JSONResponse:
    """A GET's `{"value": ...}` with its version as ETag (compare-and-set, an assetbus extension), serialized
    once (the value was checked when it was written, so it is not validated again on the way out)."""
    return JSONResponse({"value": json.loads(found.json)}, headers={"ETag": etag(found.version)})


def no_content(deleted: int | None = None, version: int | None = None) -> Response:
    """A 204, with how many keys went (DELETE, clear) or the new version (PUT) in headers."""
    response = Response(status_code=204)
    if deleted is not None:
        response.headers[DELETED_HEADER] = str(deleted)
    if version is not None:
        response.headers["ETag"] = etag(version)
    return response
