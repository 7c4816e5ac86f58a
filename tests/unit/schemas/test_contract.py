"""The wire contract: JSON Schema export, descriptions everywhere, provenance rules."""

from __future__ import annotations

import uuid

import pytest
from pydantic import BaseModel, ValidationError

from assetbus.schemas import (
    AssetEvent,
    AssetRef,
    EmissionCommand,
    EmitterClaims,
    Provenance,
    ReadinessSignal,
    Receipt,
    ReceiptStatus,
    SourceKind,
    Topics,
    TriggeringEvent,
    json_schemas,
)

MESSAGES_DESCRIBED = [AssetEvent, AssetRef, EmissionCommand, EmitterClaims, Provenance, ReadinessSignal, Receipt,
                      TriggeringEvent, Topics]


def test_every_message_exports_a_json_schema_with_a_version_field() -> None:
    exported = json_schemas()
    assert set(exported) == {"EmissionCommand", "Receipt", "AssetEvent", "ReadinessSignal"}
    for schema in exported.values():
        assert "schema_version" in schema["properties"]


@pytest.mark.parametrize("model", MESSAGES_DESCRIBED)
def test_every_field_is_described(model: type[BaseModel]) -> None:
    missing = [name for name, f in model.model_fields.items() if not f.description]
    assert missing == []


def test_dag_source_refuses_task_fields() -> None:
    with pytest.raises(ValidationError):
        Provenance(kind=SourceKind.DAG, dag_id="d", run_id="r", task_id="t")


def test_task_source_needs_all_task_fields() -> None:
    with pytest.raises(ValidationError):
        Provenance(kind=SourceKind.TASK, dag_id="d", run_id="r", task_id="t")


def test_explicit_dedupe_scope_ignores_the_try_number() -> None:
    first = Provenance(kind=SourceKind.TASK, dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    retry = first.model_copy(update={"try_number": 2})
    assert first.dedupe_scope() == retry.dedupe_scope()


def test_topic_names_take_the_prefix() -> None:
    topics = Topics(prefix="x")
    assert (topics.emissions, topics.receipts, topics.asset_events, topics.emissions_dlq) == (
        "x.emissions", "x.receipts", "x.asset-events", "x.emissions.dlq")
    assert topics.readiness("daily_report") == "x.readiness.daily_report"
    assert topics.core()[topics.emissions] >= 6
    with pytest.raises(ValueError):
        topics.readiness("bad/name")


def test_a_receipts_id_is_its_event_id_as_the_proposal_names_it() -> None:
    receipt = Receipt(correlation_id=uuid.uuid4(), status=ReceiptStatus.ACCEPTED, event_id=41)
    assert receipt.id == receipt.event_id == 41
