"""If-Match / If-None-Match parsing into compare-and-set preconditions."""

from __future__ import annotations

import pytest

from assetbus.consumers.api.errors import ApiError
from assetbus.consumers.api.routes.common import parse_precondition
from assetbus.consumers.storage.state import Precondition


def test_no_headers_is_an_unconditional_write() -> None:
    assert parse_precondition(None, None).unconditional
    assert parse_precondition("", " ").unconditional


@pytest.mark.parametrize(("header", "versions"), [
    ('"3"', {3}), ("3", {3}), ('W/"3"', {3}), ('"3", "5"', {3, 5}), (' "7" ', {7}),
])
def test_if_match_versions_are_read_from_etags(header: str, versions: set[int]) -> None:
    assert parse_precondition(header) == Precondition(versions=frozenset(versions))


def test_if_match_star_means_the_key_must_exist() -> None:
    assert parse_precondition("*") == Precondition(must_exist=True)


def test_if_none_match_star_means_create_only() -> None:
    assert parse_precondition(None, "*") == Precondition(must_be_absent=True)


@pytest.mark.parametrize(("if_match", "if_none_match"), [
    ("latest", None), ('"3", x', None), ('"-1"', None), ('"1234567890"', None), ('"٣"', None),
    (None, '"3"'), ('"3"', "*"),
])
def test_malformed_or_contradictory_headers_are_422(if_match: str | None, if_none_match: str | None) -> None:
    with pytest.raises(ApiError) as raised:
        parse_precondition(if_match, if_none_match)
    assert raised.value.status == 422 and raised.value.body.code == "invalid_request"
