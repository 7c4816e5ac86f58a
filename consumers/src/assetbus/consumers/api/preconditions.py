"""`If-Match` / `If-None-Match` headers → a storage Precondition (compare-and-set).

`If-Match: "3"` writes only over version 3 (a list matches any of them; `W/"3"` and a bare `3`
are accepted too); `If-Match: *` only over an existing value; `If-None-Match: *` creates only.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Header

from assetbus.consumers.api.errors import ApiError, ApiErrorCode
from assetbus.consumers.storage.state import Precondition

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
    """The condition the headers ask for (422 if they are malformed or contradict each other)."""
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
