"""Decoding raw bytes: commands, answerable rejections, and dead letters for the unanswerable."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from assetbus.consumers.persister.decode import DeadLetter, Rejection, decode
from assetbus.schemas import AssetRef, DeadLetterReason, EmissionCommand, ErrorCode, Provenance, SourceKind


def command(**changes: object) -> dict[str, object]:
    base = EmissionCommand(
        command_id=uuid.uuid4(), producer_id="p", reply_to="r", asset=AssetRef(name="a", uri="u"),
        source=Provenance(kind=SourceKind.DAG, dag_id="d", run_id="r"), token="t", emitted_at=datetime.now(UTC),
    ).model_dump(mode="json")
    base.update(changes)
    return base


def test_a_valid_command_decodes() -> None:
    assert isinstance(decode(json.dumps(command()).encode()), EmissionCommand)


@pytest.mark.parametrize(("raw", "reason"), [
    (b"\xff\xfe not json", DeadLetterReason.NOT_JSON),
    (b"", DeadLetterReason.NOT_JSON),
    (None, DeadLetterReason.NOT_JSON),
    (b"[1, 2]", DeadLetterReason.NOT_A_COMMAND),
    (b'{"hello": "world"}', DeadLetterReason.NO_REPLY_ADDRESS),
    (json.dumps(command(reply_to=None)).encode(), DeadLetterReason.NO_REPLY_ADDRESS),
])
def test_unanswerable_bytes_become_dead_letters(raw: bytes | None, reason: DeadLetterReason) -> None:
    decoded = decode(raw)
    assert isinstance(decoded, DeadLetter) and decoded.reason is reason


@pytest.mark.parametrize(("changes", "code"), [
    ({"schema_version": 99}, ErrorCode.UNSUPPORTED_SCHEMA_VERSION),
    ({"asset": "not an object"}, ErrorCode.INVALID_COMMAND),
    ({"extra": {"k": "nul\u0000byte"}}, ErrorCode.INVALID_COMMAND),
    ({"partition_key": ""}, ErrorCode.INVALID_PARTITION),  # as ErrorCode.INVALID_PARTITION documents
    ({"partition_key": "p", "partition_date": "not a date"}, ErrorCode.INVALID_PARTITION),
])
def test_answerable_but_malformed_commands_are_rejected(changes: dict[str, object], code: ErrorCode) -> None:
    decoded = decode(json.dumps(command(**changes)).encode())
    assert isinstance(decoded, Rejection) and decoded.code is code

