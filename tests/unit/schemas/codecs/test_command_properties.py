"""EmissionCommand: the fast encoder and the fast reader agree with the model, in both directions."""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from assetbus.schemas import EmissionCommand
from assetbus.schemas.codecs import (
    CommandEncoder,
    CommandFields,
    CommandView,
    DeadLetter,
    Rejection,
    compact_json,
    decode_command,
    encode_command,
    read_command,
    read_command_fast,
)
from tests.unit.schemas.codecs.strategies import assets as asset_refs
from tests.unit.schemas.codecs.strategies import (
    aware_datetimes,
    commands,
    extras,
    json_values,
    mutated,
    optional_texts,
    partitions,
    sources,
    texts,
    topic_names,
)

FIELDS = ["schema_version", "command_id", "producer_id", "reply_to", "asset", "asset.name", "asset.uri", "source",
          "source.kind", "source.task_id", "source.map_index", "source.try_number", "token", "extra",
          "partition_key", "partition_date", "dedupe_key", "emitted_at"]


@st.composite
def command_fields(draw: st.DrawFn) -> CommandFields:
    extra = draw(extras)
    key, date = draw(partitions())
    return CommandFields(uuid.uuid4(), draw(asset_refs), extra, compact_json(extra), key, date,
                         draw(optional_texts), draw(aware_datetimes))


@settings(max_examples=100)
@given(fields=command_fields(), producer=texts, reply_to=topic_names, source=sources, token=texts)
def test_fast_encoding_decodes_by_the_model_to_the_command_it_stands_for(
        fields: CommandFields, producer: str, reply_to: str, source: Any, token: str) -> None:
    encoder = CommandEncoder(producer, reply_to, source, token)
    fast, model = encoder.encode(fields), encoder.command(fields)
    # Compared after a round trip on both sides: a datetime in a DST fold never equals one in another zone.
    assert EmissionCommand.model_validate_json(fast) == EmissionCommand.model_validate_json(encode_command(model))
    assert json.loads(fast) == json.loads(encode_command(model))


@settings(max_examples=100)
@given(command=commands())
def test_model_encoding_reads_on_the_fast_path_to_the_same_command(command: EmissionCommand) -> None:
    raw = encode_command(command)
    reference = CommandView.of(EmissionCommand.model_validate_json(raw))
    assert read_command_fast(raw) == reference
    assert read_command(raw) == reference


def outcome(result: object) -> type:
    """The outcome class: accepted (a command, as view or model), rejected, or dead-lettered."""
    return CommandView if isinstance(result, (CommandView, EmissionCommand)) else type(result)


def check_both_paths(raw: bytes) -> None:
    try:
        model: EmissionCommand | None = EmissionCommand.model_validate_json(raw)
    except ValidationError:
        model = None
    fast = read_command_fast(raw)
    if model is None:
        assert fast is None, "the fast path accepted what the model refuses"
    elif fast is not None:
        assert fast == CommandView.of(model)
    slow, read = decode_command(raw), read_command(raw)
    assert outcome(read) is outcome(slow)
    if isinstance(slow, EmissionCommand):
        assert model is not None and read == CommandView.of(slow) == CommandView.of(model)
    else:
        assert isinstance(read, (Rejection, DeadLetter)) and read == slow


@settings(max_examples=150)
@given(data=st.data(), command=commands())
def test_a_broken_command_gets_the_same_outcome_on_both_paths(data: st.DataObject, command: EmissionCommand) -> None:
    check_both_paths(json.dumps(mutated(data.draw, command.model_dump(mode="json"), FIELDS)).encode())


@given(value=json_values | st.binary(max_size=40).map(repr))
def test_json_that_is_no_command_at_all_is_refused_on_both_paths(value: Any) -> None:
    check_both_paths(json.dumps(value).encode())


@given(raw=st.binary(max_size=60))
def test_bytes_that_are_not_json_are_refused_on_both_paths(raw: bytes) -> None:
    check_both_paths(raw)
