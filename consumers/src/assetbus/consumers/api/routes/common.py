"""Parameters, headers and checks shared by the state store routes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Response
from fastapi.responses import JSONResponse

from assetbus.consumers.api.errors import ApiError, ApiErrorCode, etag, responses
from assetbus.consumers.api.models import KEY_PATTERN, NAME_PATTERN, StoreValueOut, encoded_value
from assetbus.consumers.storage.state import Precondition, RawValue
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


def add_store_routes(router: APIRouter, item: str, clear_path: str, handlers: tuple[Callable[..., Any], ...], *,
                     key: str, clear: str, alias: str = "") -> None:
    """A state store's routes: GET, PUT and DELETE of one key at `item`, and the clear at `clear_path` (`handlers`
    in that order), their summaries naming `key` and `clear`; with an `alias` note they are deprecated."""
    get, put, delete, clear_all = handlers
    for path, handler, method, statuses, summary in (
            (item, get, "GET", (403, 404), f"Get {key}"),
            (item, put, "PUT", (403, 412), f"Set {key} (compare-and-set with If-Match / If-None-Match)"),
            (item, delete, "DELETE", (403, 412), f"Delete {key} (no-op if absent; compare-and-set with If-Match)"),
            (clear_path, clear_all, "DELETE", (403,), clear)):
        answer: dict[str, Any] = ({"response_model": StoreValueOut} if method == "GET"
                                  else {"status_code": 204, "response_class": Response})
        router.add_api_route(path, handler, methods=[method], deprecated=bool(alias),
                             responses=responses(*statuses, store=True), summary=summary + alias, **answer)


def no_content(deleted: int | None = None, version: int | None = None) -> Response:
    """A 204, with how many keys went (DELETE, clear) or the new version (PUT) in headers."""
    response = Response(status_code=204)
    if deleted is not None:
        response.headers[DELETED_HEADER] = str(deleted)
    if version is not None:
        response.headers["ETag"] = etag(version)
    return response


_TAG = re.compile(r'^(?:W/)?"?([0-9]{1,9})"?$')

IfMatch = Annotated[str | None, Header(
    alias="If-Match", description='Compare-and-set: the expected version(s), as returned in `ETag` (`"3"`), '
    "or `*` for any existing value. A mismatch is answered 412.")]
IfNoneMatch = Annotated[str | None, Header(
    alias="If-None-Match", description="`*`: create only; 412 if the key already has a value.")]


def _invalid(header: str, value: str) -> ApiError:
    return ApiError(422, ApiErrorCode.INVALID_REQUEST,
                    f'{header} must be `*` or versions like "3" (comma-separated), not {value[:60]!r}')


def parse_precondition(if_match: str | None, if_none_match: str | None = None) -> Precondition:
    """The compare-and-set condition the headers ask for (docs/state.md), 422 if they are malformed or contradict
    each other; `If-Match` takes a list of versions, and `W/"3"` or a bare `3` for `"3"`."""
    if if_none_match is not None and if_none_match.strip():
        if if_none_match.strip() != "*":
            raise _invalid("If-None-Match", if_none_match)
        if if_match is not None and if_match.strip():
            raise ApiError(422, ApiErrorCode.INVALID_REQUEST, "send If-Match or If-None-Match, not both")
        return Precondition(must_be_absent=True)
    if if_match is None or not if_match.strip():
        return Precondition()
    if if_match.strip() == "*":
        return Precondition(must_exist=True)
    versions: set[int] = set()
    for part in if_match.split(","):
        found = _TAG.match(part.strip())
        if found is None:
            raise _invalid("If-Match", if_match)
        versions.add(int(found.group(1)))
    return Precondition(versions=frozenset(versions))
