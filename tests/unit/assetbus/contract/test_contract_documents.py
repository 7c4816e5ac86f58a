"""The committed contract documents are what the code generates (CI fails when one is stale), and they
describe the wire: every topic, key and dead-letter header, and schemas a non-Python client can validate with."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import jsonschema_rs
import yaml

from assetbus.contract.documents import stale_documents
from assetbus.producers import issue_token
from assetbus.schemas import DEAD_LETTER_HEADERS, AssetRef, EmissionCommand, Provenance, SourceKind, Topics

DOCS = Path(__file__).resolve().parents[4] / "docs"


def test_committed_contract_documents_are_up_to_date() -> None:
    assert stale_documents(DOCS) == [], "run `assetbus contract export` and commit docs/"


def test_asyncapi_names_every_topic_its_key_and_the_dead_letter_headers() -> None:
    document = yaml.safe_load((DOCS / "asyncapi.yaml").read_text())
    addresses = {c["address"].replace("{prefix}", "assetbus") for c in document["channels"].values()}
    assert set(Topics().core()) <= addresses and "assetbus.readiness.{dag_id}" in addresses
    messages = document["components"]["messages"]
    assert all(m["bindings"]["kafka"]["key"]["description"] for m in messages.values())
    headers = messages["DeadLetter"]["headers"]["properties"]
    assert set(DEAD_LETTER_HEADERS) <= set(headers)
    assert headers["assetbus.dlq.reason"]["enum"] == ["not_json", "not_a_command", "no_reply_address"]


def test_the_openapi_document_has_the_state_and_emit_routes() -> None:
    paths = json.loads((DOCS / "openapi.json").read_text())["paths"]
    assert any(p.startswith(("/execution/store/ti/", "/execution/state/ti/")) for p in paths)
    assert any("emit" in p for p in paths)


def test_a_real_command_validates_against_the_exported_schema_and_a_broken_one_does_not() -> None:
    validator = jsonschema_rs.validator_for(json.loads((DOCS / "schemas" / "EmissionCommand.json").read_text()))
    source = Provenance(kind=SourceKind.TASK, dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    command = EmissionCommand(command_id=uuid.uuid4(), producer_id="p", reply_to="assetbus.receipts",
                              asset=AssetRef(name="orders", uri="s3://b/orders/"), source=source,
                              token=issue_token("k" * 32, source), partition_key="2026-12-01",
                              emitted_at=datetime.now(UTC))
    body = json.loads(command.model_dump_json())
    assert validator.is_valid(body)
    del body["asset"]
    assert not validator.is_valid(body)
