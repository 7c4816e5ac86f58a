"""Client-side checks refuse a bad emission before anything is sent, naming the argument at fault."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from assetbus.producers import Asset, InvalidEmission, NoEmissionContext, UnknownAsset, forbid_emission, task_context
from assetbus.producers.testing import InMemoryEmitter
from assetbus.producers.wire import prepare
from assetbus.schemas import EXTRA_MAX_BYTES, AssetRef

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"partition_key": "2026-10-01", "partition_date": datetime(2026, 10, 1)}, "partition_date", "time-zone aware"),
    ({"partition_date": datetime(2026, 10, 1, tzinfo=UTC)}, "partition_date", "requires partition_key"),
    ({"partition_key": "k", "partition_date": "2026-10-01"}, "partition_date", "must be a datetime"),
    ({"extra": {"when": datetime(2026, 10, 1)}}, "extra", "not JSON-serializable"),
    ({"extra": {"ratio": float("nan")}}, "extra", "not JSON-serializable"),
    ({"extra": ["rows", 1]}, "extra", "JSON object"),
    ({"extra": {"blob": "x" * EXTRA_MAX_BYTES}}, "extra", "the limit is"),
    ({"extra": {"text": "a\x00b"}}, "extra", "NUL"),
    ({"partition_key": ""}, "partition_key", "non-empty"),
    ({"dedupe_key": "x" * 251}, "dedupe_key", "at most 250"),
])
def test_bad_arguments_raise_invalid_emission_naming_the_field(fields: dict[str, Any], field: str,
                                                               words: str) -> None:
    with pytest.raises(InvalidEmission) as raised:
        prepare(ORDERS, **fields)
    assert raised.value.field == field
    assert words in str(raised.value)


def test_extra_just_under_the_limit_is_allowed() -> None:
    request = prepare(ORDERS, extra={"blob": "x" * (EXTRA_MAX_BYTES - 20)})
    assert len(request.extra_json.encode()) <= EXTRA_MAX_BYTES


def test_emitting_with_no_running_task_raises_no_emission_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSETBUS_TOKEN", raising=False)
    with pytest.raises(NoEmissionContext, match="outside a running task or callback"):
        Asset("orders", "s3://bucket/orders/").emit()


def test_emitting_while_a_dag_file_is_parsed_is_refused_even_with_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    bus = InMemoryEmitter()
    monkeypatch.setenv("ASSETBUS_TOKEN", bus.token)
    with forbid_emission("while dags/ingest.py is parsed"), pytest.raises(NoEmissionContext, match="parsed"):
        Asset("orders", "s3://bucket/orders/").emit()
    assert bus.commands == []


def test_an_undeclared_asset_handle_is_refused_before_sending() -> None:
    bus = InMemoryEmitter()
    orders, refunds = Asset("orders", "s3://bucket/orders/"), Asset("refunds", "s3://bucket/refunds/")
    with bus.task(outlets=[orders]), pytest.raises(UnknownAsset) as raised:
        refunds.emit()
    assert raised.value.field == "asset" and "orders" in str(raised.value)
    assert bus.commands == []


def test_a_declared_name_with_another_uri_is_an_unknown_asset() -> None:
    bus = InMemoryEmitter()
    with bus.task(outlets=[Asset("orders", "s3://bucket/orders/")]), pytest.raises(UnknownAsset):
        Asset("orders", "s3://elsewhere/").emit()


def test_an_asset_handle_needs_a_name_and_a_uri() -> None:
    with pytest.raises(InvalidEmission, match=r"asset\.uri"):
        Asset("orders", "")


def test_an_explicit_context_needs_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSETBUS_TOKEN", raising=False)
    with pytest.raises(NoEmissionContext), task_context():
        pass


def test_a_malformed_token_is_refused_when_the_context_is_set_up() -> None:
    with pytest.raises(InvalidEmission, match="token"), task_context("not-a-jwt"):
        pass
