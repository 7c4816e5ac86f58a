"""AssetEvent: the persister's fast encoder and the fast reader agree with the model, in both directions."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from assetbus.schemas import AssetEvent, AssetRef, Provenance
from assetbus.schemas.codecs import (
    EventView,
    Fragments,
    compact_json,
    decode_event,
    encode_event,
    event_bytes,
    read_event,
    read_event_fast,
)
from tests.unit.schemas.codecs.strategies import (
    assets,
    extras,
    json_values,
    mutated,
    partitions,
    sources,
    texts,
    utc_datetimes,
)

FIELDS = ["schema_version", "event_id", "asset", "asset.name", "asset.uri", "extra", "partition_key",
          "partition_date", "dedupe_key", "command_id", "source", "source.kind", "source.task_id",
          "source.map_index", "source.try_number", "timestamp"]


@st.composite
def events(draw: st.DrawFn) -> AssetEvent:
    key, date = draw(partitions())
    return AssetEvent(event_id=draw(st.integers(1, 2**62)), asset=draw(assets), extra=draw(extras),
                      partition_key=key, partition_date=date, dedupe_key=draw(texts), command_id=draw(st.uuids()),
                      source=draw(sources), timestamp=draw(utc_datetimes))


def fast_bytes(event: AssetEvent, source: Provenance, fragments: Fragments) -> bytes:
    return event_bytes(event.event_id, fragments.asset(event.asset.name, event.asset.uri), compact_json(event.extra),
                       event.partition_key, event.partition_date, event.dedupe_key, str(event.command_id),
                       source.model_dump_json(), fragments.time(event.timestamp))


@settings(max_examples=100)
@given(event=events())
def test_fast_encoding_decodes_by_the_model_to_the_event_it_stands_for(event: AssetEvent) -> None:
    fast = fast_bytes(event, event.source, Fragments())
    in_utc = event.model_copy(update={"partition_date": event.partition_date and event.partition_date.astimezone(UTC)})
    assert decode_event(fast) == decode_event(encode_event(in_utc))
    assert json.loads(fast) == json.loads(encode_event(in_utc))


@settings(max_examples=100)
@given(event=events())
def test_model_encoding_reads_on_the_fast_path_to_the_same_event(event: AssetEvent) -> None:
    raw = encode_event(event)
    reference = EventView.of(decode_event(raw))
    assert read_event_fast(raw) == reference
    assert read_event(raw) == reference


def check_both_paths(raw: bytes) -> None:
    try:
        model: AssetEvent | None = decode_event(raw)
    except ValidationError:
        model = None
    fast = read_event_fast(raw)
    if model is None:
        assert fast is None, "the fast path accepted what the model refuses"
        with pytest.raises(ValidationError):
            read_event(raw)
    else:
        assert fast is None or fast == EventView.of(model)
        assert read_event(raw) == EventView.of(model)


@settings(max_examples=150)
@given(data=st.data(), event=events())
def test_a_broken_event_gets_the_same_outcome_on_both_paths(data: st.DataObject, event: AssetEvent) -> None:
    check_both_paths(json.dumps(mutated(data.draw, event.model_dump(mode="json"), FIELDS)).encode())


@given(value=json_values)
def test_json_that_is_no_event_is_refused_on_both_paths(value: Any) -> None:
    check_both_paths(json.dumps(value).encode())


@given(raw=st.binary(max_size=60))
def test_bytes_that_are_not_json_are_refused_on_both_paths(raw: bytes) -> None:
    check_both_paths(raw)


def test_a_non_canonical_command_id_is_left_to_the_model_which_normalizes_it() -> None:
    event = AssetEvent(event_id=1, asset=AssetRef(name="a", uri="u"), dedupe_key="k", command_id=uuid.uuid4(),
                       source=Provenance(kind="dag", dag_id="d", run_id="r"), timestamp=datetime.now(UTC))
    raw = encode_event(event).replace(str(event.command_id).encode(), event.command_id.hex.upper().encode())
    assert read_event_fast(raw) is None
    assert read_event(raw).command_id_text == str(event.command_id)


def test_asset_event_has_no_model_rule_the_fast_reader_does_not_apply() -> None:
    """If this fails, a validator was added to the contract: teach `read_event_fast` the same rule."""
    assert not AssetEvent.__pydantic_decorators__.model_validators
    assert not AssetEvent.__pydantic_decorators__.field_validators


def test_a_task_source_without_task_fields_is_refused_by_both_paths() -> None:
    event = AssetEvent(event_id=1, asset=AssetRef(name="a", uri="u"), dedupe_key="k", command_id=uuid.uuid4(),
                       source=Provenance(kind="dag", dag_id="d", run_id="r"), timestamp=datetime.now(UTC))
    raw = encode_event(event).replace(b'"kind":"dag"', b'"kind":"task"')
    assert read_event_fast(raw) is None
    with pytest.raises(ValidationError, match="task source needs"):
        read_event(raw)
