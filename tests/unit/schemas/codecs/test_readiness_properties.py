"""ReadinessSignal and its TriggeringEvents: the scheduler's fast encoding agrees with the model, both ways.

Signals are decoded by the model alone (`decode_signal`): the subscriber hands the model to its
handler, so there is no second decoder to hold to it.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from assetbus.schemas import ReadinessSignal, TriggeringEvent, codecs
from tests.unit.schemas.codecs.strategies import aware_datetimes, optional_texts, partitions, sources, texts


@st.composite
def triggering_events(draw: st.DrawFn) -> TriggeringEvent:
    key, date = draw(partitions())
    return TriggeringEvent(event_id=draw(st.integers(1, 2**62)), asset_name=draw(texts), partition_key=key,
                           partition_date=date, source=draw(sources), timestamp=draw(aware_datetimes))


@st.composite
def signals(draw: st.DrawFn) -> ReadinessSignal:
    key, date = draw(partitions())
    return ReadinessSignal(run_id=draw(texts), dag_id=draw(texts), partition_key=key, partition_date=date,
                           generation=draw(st.integers(1, 10_000)),
                           events=draw(st.lists(triggering_events(), max_size=4)),
                           created_at=draw(aware_datetimes), origin=draw(optional_texts))


def payload_json(event: TriggeringEvent) -> str:
    payload = codecs.triggering_event(event.event_id, event.asset_name, event.partition_key, event.partition_date,
                                      codecs.source_dict(event.source), event.timestamp)
    return codecs.plain_json(payload)


def fast_bytes(signal: ReadinessSignal) -> bytes:
    events = codecs.json_array(payload_json(e) for e in signal.events)
    return codecs.signal_bytes(signal.run_id, signal.dag_id, signal.partition_key, signal.partition_date,
                               signal.generation, signal.created_at, signal.origin, events)


def roundtrip(signal: ReadinessSignal) -> ReadinessSignal:
    """Through the model's own encoding (a datetime in a DST fold never equals one in another zone)."""
    return codecs.decode_signal(codecs.encode_signal(signal))


@settings(max_examples=80)
@given(signal=signals())
def test_a_fast_signal_decodes_to_the_signal_it_stands_for(signal: ReadinessSignal) -> None:
    assert codecs.decode_signal(fast_bytes(signal)) == roundtrip(signal)


@settings(max_examples=80)
@given(signal=signals())
def test_the_models_encoding_holds_what_the_fast_encoding_holds(signal: ReadinessSignal) -> None:
    model, fast = json.loads(codecs.encode_signal(signal)), json.loads(fast_bytes(signal))
    assert model.keys() == fast.keys() and len(model["events"]) == len(fast["events"])
    assert codecs.decode_signal(json.dumps(model).encode()) == codecs.decode_signal(json.dumps(fast).encode())


@settings(max_examples=80)
@given(event=triggering_events())
def test_a_triggering_event_payload_is_the_event_it_stands_for(event: TriggeringEvent) -> None:
    payload = json.loads(payload_json(event))
    assert payload.keys() == json.loads(event.model_dump_json()).keys()
    assert TriggeringEvent.model_validate(payload) == TriggeringEvent.model_validate_json(event.model_dump_json())


@settings(max_examples=200)
@given(event=triggering_events())
def test_a_payload_assembled_from_fragments_is_the_same_text_as_its_plain_json(event: TriggeringEvent) -> None:
    payload = codecs.triggering_event(event.event_id, event.asset_name, event.partition_key, event.partition_date,
                                      codecs.source_dict(event.source), event.timestamp)
    source_json = codecs.Fragments().source(payload["source"])
    assert codecs.triggering_event_json(payload, source_json) == codecs.plain_json(payload)
