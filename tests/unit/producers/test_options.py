"""The emission's options are written once (`EmitOptions`), and every layer agrees with them field by field:
the wire model, its fast codec, the HTTP emit body, the stored event's columns and the published event."""

from __future__ import annotations

import dataclasses
import inspect
import json
from datetime import UTC, datetime

import pytest

from assetbus.consumers.api.models import EmitRequest
from assetbus.consumers.storage.tables import asset_events
from assetbus.producers import AsyncEmitter
from assetbus.producers.airflow.emit import _asset_aemit, _asset_emit
from assetbus.producers.airflow.emit import aemit as airflow_aemit
from assetbus.producers.airflow.emit import emit as airflow_emit
from assetbus.producers.assets import Asset
from assetbus.producers.options import EMIT_FIELDS, EmitOptions, SendOptions
from assetbus.producers.testing import InMemoryEmitter
from assetbus.producers.tokens import task_token
from assetbus.producers.wire import command_encoder, prepare
from assetbus.schemas import AssetEvent, AssetRef, EmissionCommand
from assetbus.schemas.codecs import CommandFields

ENVELOPE = {"schema_version", "command_id", "producer_id", "reply_to", "asset", "source", "token", "emitted_at"}
"""What the emitter adds around the options: identity, routing and bookkeeping, never chosen per call."""

EVERY_OPTION: EmitOptions = {"extra": {"rows": 7}, "partition_key": "2026-10-01",
                             "partition_date": datetime(2026, 10, 1, tzinfo=UTC), "dedupe_key": "batch-41"}


def test_the_options_are_the_emission_fields() -> None:
    assert EMIT_FIELDS == {"extra", "partition_key", "partition_date", "dedupe_key"} == set(EVERY_OPTION)
    assert set(SendOptions.__annotations__) == EMIT_FIELDS | {"timeout_s"}


def test_the_wire_model_holds_the_options_and_nothing_else_per_call() -> None:
    assert set(EmissionCommand.model_fields) - ENVELOPE == EMIT_FIELDS


def test_the_fast_codec_holds_every_option() -> None:
    names = {field.name for field in dataclasses.fields(CommandFields)}
    assert names - {"command_id", "asset", "extra_json", "emitted_at"} == EMIT_FIELDS


def test_the_http_body_holds_the_options_and_nothing_else_per_call() -> None:
    assert set(EmitRequest.model_fields) - {"asset", "command_id"} == EMIT_FIELDS


def test_the_stored_event_and_the_published_event_keep_every_option() -> None:
    assert EMIT_FIELDS <= set(asset_events.c.keys())
    assert EMIT_FIELDS <= set(AssetEvent.model_fields)


def test_every_option_reaches_the_encoded_command() -> None:
    request = prepare(AssetRef(name="orders", uri="s3://bucket/orders/"), timeout_s=2.0, **EVERY_OPTION)
    token = task_token("a-local-secret-of-at-least-32-bytes", "ingest", "run-1", "load")
    encoder = command_encoder("producer-1", "replies", token)
    sent = json.loads(encoder.encode(request))
    command = EmissionCommand.model_validate(sent)
    assert {name: getattr(command, name) for name in EMIT_FIELDS} == EVERY_OPTION


def test_a_misspelt_option_is_a_type_error_before_anything_is_sent() -> None:
    with pytest.raises(TypeError, match="dedup_key"):
        prepare(AssetRef(name="orders", uri="s3://bucket/orders/"), dedup_key="batch-41")  # type: ignore[call-arg]


@pytest.mark.parametrize("surface", [Asset.emit, Asset.emit_nowait, Asset.aemit, Asset.aemit_nowait,
                                     AsyncEmitter.emit, AsyncEmitter.emit_nowait, AsyncEmitter.command,
                                     InMemoryEmitter.emit, InMemoryEmitter.emit_nowait, prepare,
                                     airflow_emit, airflow_aemit, _asset_emit, _asset_aemit])
def test_every_emit_surface_takes_the_options_as_one_typed_keyword_set(surface: object) -> None:
    parameters = inspect.signature(surface).parameters  # type: ignore[arg-type]
    assert not EMIT_FIELDS & set(parameters), "spell the options as **options: Unpack[...], not one by one"
    (options,) = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert "Unpack[SendOptions]" in str(options.annotation) or "Unpack[EmitOptions]" in str(options.annotation)
