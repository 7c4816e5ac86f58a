"""The JSON pieces fast encoders are assembled from are what pydantic writes and reads."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pydantic_core import from_json, to_json

from assetbus.schemas.codecs import Fragments, json_asset, json_datetime, json_str
from assetbus.schemas.codecs.text import CACHE_LIMIT
from tests.unit.schemas.codecs.strategies import aware_datetimes

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
