"""The fast command encoder writes exactly what the pydantic contract model would."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from assetbus.producers.tokens import task_token
from assetbus.producers.wire import command_encoder, prepare
from assetbus.schemas import AssetRef, EmissionCommand

TOKEN = task_token("unit-test-secret-of-at-least-32-bytes", "ingest", "run-1", "load", map_index=3, try_number=2)
ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")


@pytest.mark.parametrize("fields", [
    {},
    {"extra": {"rows": 100, "path": "s3://bucket/orders/41.parquet"}, "partition_key": "2026-10-01",
     "partition_date": datetime(2026, 10, 1, tzinfo=UTC), "dedupe_key": "batch-41"},
    {"extra": {"nested": {"ü": ["ß", 1.5, None, True]}, "quote": 'a "b" \\ c\n'}, "partition_key": 'k "q" é',
     "partition_date": datetime(2026, 10, 1, 2, 30, tzinfo=timezone(timedelta(hours=2))), "dedupe_key": "d\tk"},
])
def test_fast_encoding_parses_to_the_same_command_as_the_model(fields: dict[str, object]) -> None:
    encoder = command_encoder("producer-1", "assetbus.receipts", TOKEN)
    request = prepare(ORDERS, **fields)  # type: ignore[arg-type]
    fast = EmissionCommand.model_validate_json(encoder.encode(request))
    assert fast == encoder.command(request)
    assert json.loads(encoder.encode(request)) == json.loads(encoder.command(request).model_dump_json())


def test_the_source_of_an_encoded_command_is_the_tokens() -> None:
    request = prepare(ORDERS)
    command = EmissionCommand.model_validate_json(command_encoder("p", "r", TOKEN).encode(request))
    assert (command.source.task_id, command.source.map_index, command.source.try_number) == ("load", 3, 2)


def test_each_request_gets_its_own_command_id() -> None:
    assert prepare(ORDERS).command_id != prepare(ORDERS).command_id
