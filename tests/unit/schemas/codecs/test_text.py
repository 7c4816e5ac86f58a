"""The JSON pieces fast encoders are assembled from are what pydantic writes and reads."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from enum import IntEnum

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pydantic_core import from_json, to_json

from assetbus.schemas.codecs import Fragments, compact_json, json_asset, json_datetime, json_str, strict_json
from assetbus.schemas.codecs.text import CACHE_LIMIT
from tests.unit.schemas.codecs.strategies import aware_datetimes


class Level(IntEnum):
    HIGH = 2


any_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]))
DATETIME = TypeAdapter(datetime)


@given(text=any_text)
def test_a_json_string_reads_back_as_the_string(text: str) -> None:
    assert from_json(json_str(text)) == text
    assert json_str(None) == "null"


@given(when=aware_datetimes)
def test_a_json_datetime_is_pydantics(when: datetime) -> None:
    assert json_datetime(when) == to_json(when).decode()
    assert DATETIME.validate_json(json_datetime(when)) == DATETIME.validate_json(to_json(when))


@given(name=any_text, uri=any_text)
def test_an_asset_reads_back_as_its_name_and_uri(name: str, uri: str) -> None:
    assert from_json(json_asset(name, uri)) == {"name": name, "uri": uri}


def test_fragments_stay_bounded() -> None:
    fragments = Fragments()
    for i in range(CACHE_LIMIT + 5):
        assert from_json(fragments.asset(f"a{i}", "u")) == {"name": f"a{i}", "uri": "u"}
    assert len(fragments._assets) <= CACHE_LIMIT


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4), max_leaves=20)


@given(value=st.dictionaries(any_text, plain_values, max_size=6))
def test_strict_json_reads_back_as_what_compact_json_writes(value: dict[str, object]) -> None:
    assert json.loads(strict_json(value)) == json.loads(compact_json(value))


@pytest.mark.parametrize("value", [
    {"when": datetime(2026, 10, 1)}, {"ratio": float("nan")}, {"big": float("inf")}, {"tags": {"a"}},
    {"id": uuid.uuid4()}, {"nested": [{"deep": float("-inf")}]}, {None: {b"bytes"}},
])
def test_strict_json_refuses_what_compact_json_refuses(value: dict[object, object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        compact_json(value)
    with pytest.raises((TypeError, ValueError)):
        strict_json(value)


@pytest.mark.parametrize("value", [{"pair": (1, 2)}, {1: "int key"}, {1.5: "float key"}, {"lone": "\ud800"},
                                   {"level": Level.HIGH}])
def test_strict_json_leaves_what_pydantic_would_write_differently_to_compact_json(value: dict[object, object]) -> None:
    assert strict_json(value) == compact_json(value)
