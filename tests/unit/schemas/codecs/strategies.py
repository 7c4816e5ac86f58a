"""Hypothesis strategies for wire messages: valid values of every field, and JSON to break them with."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

from assetbus.schemas import AssetRef, EmissionCommand, Provenance, SourceKind

texts = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1,
                max_size=20)
"""Non-empty strings a database and UTF-8 can hold (NUL and lone surrogates are refused on purpose)."""
optional_texts = st.none() | texts
topic_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1,
                      max_size=30)

zones = st.sampled_from([UTC, ZoneInfo("Europe/Amsterdam"), ZoneInfo("America/St_Johns")]) | st.integers(
    -14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
"""Whole-minute offsets: JSON datetimes (pydantic's) carry no seconds of offset."""
aware_datetimes = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=zones)
utc_datetimes = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))

json_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
                | st.floats(allow_nan=False, allow_infinity=False) | texts)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8)
extras = st.dictionaries(texts, json_values, max_size=4)

task_sources = st.builds(Provenance, kind=st.just(SourceKind.TASK), dag_id=texts, run_id=texts, task_id=texts,
                         map_index=st.integers(-1, 10_000), try_number=st.integers(1, 100))
dag_sources = st.builds(Provenance, kind=st.just(SourceKind.DAG), dag_id=texts, run_id=texts)
sources = task_sources | dag_sources
assets = st.builds(AssetRef, name=texts, uri=texts)


@st.composite
def partitions(draw: st.DrawFn) -> tuple[str | None, datetime | None]:
    """(partition_key, partition_date): a date only with a key."""
    key = draw(optional_texts)
    return key, (draw(st.none() | aware_datetimes) if key is not None else None)


@st.composite
def commands(draw: st.DrawFn) -> EmissionCommand:
    """Valid commands that a consumer can answer (a reply topic Kafka accepts)."""
    key, date = draw(partitions())
    return EmissionCommand(command_id=draw(st.uuids()), producer_id=draw(texts), reply_to=draw(topic_names),
                           asset=draw(assets), source=draw(sources), token=draw(texts), extra=draw(extras),
                           partition_key=key, partition_date=date, dedupe_key=draw(optional_texts),
                           emitted_at=draw(aware_datetimes))


Draw = Callable[[st.SearchStrategy[Any]], Any]


def mutated(draw: Draw, message: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """`message` with up to three fields replaced by arbitrary JSON, nested fields included, or dropped."""
    data = dict(message)
    for _ in range(draw(st.integers(1, 3))):
        field = draw(st.sampled_from(fields))
        parent, name = data, field
        if "." in field:
            outer, name = field.split(".")
            if not isinstance(data.get(outer), dict):
                continue
            parent = data[outer] = dict(data[outer])
        if draw(st.booleans()):
            parent.pop(name, None)
        else:
            parent[name] = draw(json_values | st.sampled_from(["", "x" * 260, -2, 0, str(uuid.uuid4()).upper()]))
    return data
