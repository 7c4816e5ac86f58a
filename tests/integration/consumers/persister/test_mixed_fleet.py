"""A mixed fleet against the real broker and database: emitters one contract version behind or ahead of the
persister, and an SDK reading receipts of a newer version. The outcomes are the ones docs/contract.md states."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.producers.errors import UnsupportedSchemaVersion, rejection_error
from assetbus.producers.kafka.replies import ReplyReader
from assetbus.schemas import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    AssetRef,
    EmissionCommand,
    ErrorCode,
    ReceiptStatus,
    Topics,
)
from assetbus.schemas.codecs import command_outcomes
from assetbus.settings import Settings
from tests.integration.consumers.persister.streams import (
    commands,
    produce,
    read_topic,
    receipts_by_command,
    stored_command_ids,
)

NEXT = SCHEMA_VERSION + 1
"""The contract version a newer SDK would write: it adds an optional field this code does not know."""


def written_as(command: EmissionCommand, version: int, **new_fields: Any) -> tuple[bytes, bytes]:
    """The record an emitter of contract `version` sends: the command's JSON, that version, any new fields."""
    body = {**command.model_dump(mode="json"), "schema_version": version, **new_fields}
    return command.asset.name.encode(), json.dumps(body).encode()


async def answered(infra: Settings, topics: Topics, ids: set[uuid.UUID]) -> dict[uuid.UUID, Any]:
    records = await read_topic(infra.bootstrap_servers, topics.receipts,
                               lambda recs: ids <= set(receipts_by_command(recs)), timeout_s=60)
    return {cid: receipts for cid, receipts in receipts_by_command(records).items() if cid in ids}


async def test_an_sdk_ahead_of_the_persister_gets_unsupported_schema_version_and_nothing_behind_it_is_lost(
        infra: Settings, topics: Topics, token: str, engine: AsyncEngine, persister: Persister,
        orders: AssetRef) -> None:
    """Today's persister reads only SUPPORTED_SCHEMA_VERSIONS: a newer SDK's command (version N+1, with a field
    it does not know) and a version it never had (0) are each rejected with `unsupported_schema_version`; the
    current commands around them are stored, and a command sent after them is still answered."""
    before, ahead, ancient, after = commands(token, topics, orders, 4, key="fleet")
    await produce(infra.bootstrap_servers, topics.emissions, [
        written_as(before, SCHEMA_VERSION),
        written_as(ahead, NEXT, traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        written_as(ancient, min(SUPPORTED_SCHEMA_VERSIONS) - 1),
        written_as(after, SCHEMA_VERSION)])
    receipts = await answered(infra, topics, {c.command_id for c in (before, ahead, ancient, after)})

    for command in (before, after):
        (receipt,) = receipts[command.command_id]
        assert receipt.status is ReceiptStatus.ACCEPTED and receipt.event_id is not None
    for command in (ahead, ancient):
        (receipt,) = receipts[command.command_id]
        assert receipt.status is ReceiptStatus.REJECTED
        assert receipt.error_code is ErrorCode.UNSUPPORTED_SCHEMA_VERSION
        assert isinstance(rejection_error(receipt), UnsupportedSchemaVersion)  # what the SDK raises
    stored = set(await stored_command_ids(engine))
    assert stored == {before.command_id, after.command_id}


async def test_a_persister_ahead_of_the_sdk_reads_both_versions(
        infra: Settings, topics: Topics, token: str, engine: AsyncEngine, persister_config: PersisterConfig,
        orders: AssetRef, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next release's persister: it reads N+1 and keeps reading N (the upgrade order in docs/contract.md).
    Played by this persister with N+1 added to the versions it reads; the rest of its code is unchanged.
    An SDK one version behind (N) is accepted, and so is a newer SDK's N+1 command with a new optional field,
    which this persister ignores."""
    monkeypatch.setattr(command_outcomes, "SUPPORTED_SCHEMA_VERSIONS", SUPPORTED_SCHEMA_VERSIONS | {NEXT})
    behind, current = commands(token, topics, orders, 2, key="upgraded")
    async with Persister(persister_config):
        await produce(infra.bootstrap_servers, topics.emissions, [
            written_as(behind, SCHEMA_VERSION),
            written_as(current, NEXT, traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")])
        receipts = await answered(infra, topics, {behind.command_id, current.command_id})
    for command in (behind, current):
        (receipt,) = receipts[command.command_id]
        assert receipt.status is ReceiptStatus.ACCEPTED, receipt
    assert set(await stored_command_ids(engine)) == {behind.command_id, current.command_id}


async def test_the_sdk_reads_receipts_of_a_newer_version_and_survives_one_it_cannot_read(
        infra: Settings, topics: Topics, caplog: pytest.LogCaptureFixture) -> None:
    """The SDK's receipt reader ignores unknown fields and does not check the receipt's version: a newer
    persister's receipt (N+1, with a new field) resolves the emit. A receipt it cannot read (a status it does
    not know) is skipped with a warning, the reader keeps running, and the next readable receipt resolves."""
    producer_id = f"sdk-{uuid.uuid4().hex[:8]}"
    reader = ReplyReader(infra.kafka, topics.receipts, producer_id)
    await reader.start()
    newer, unreadable = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC).isoformat()
    try:
        futures = {cid: reader.expect(cid) for cid in (newer, unreadable)}
        kafka = AIOKafkaProducer(bootstrap_servers=infra.bootstrap_servers, acks="all")
        await kafka.start()
        try:
            async def send(body: dict[str, Any]) -> None:
                await kafka.send_and_wait(topics.receipts, json.dumps(body).encode(), key=producer_id.encode())

            await send({"schema_version": NEXT, "correlation_id": str(newer), "status": "accepted", "event_id": 41,
                        "timestamp": now, "asset_name": "orders", "dedupe_key": "k", "trace_id": "0af76519"})
            await send({"schema_version": NEXT, "correlation_id": str(unreadable), "status": "deferred"})
            receipt = await asyncio.wait_for(futures[newer], timeout=30)
            assert receipt.accepted and receipt.event_id == 41 and receipt.schema_version == NEXT
            assert not futures[unreadable].done()
            await send({"schema_version": NEXT, "correlation_id": str(unreadable), "status": "rejected",
                        "error_code": "unsupported_schema_version", "error_message": "schema_version 3"})
            late = await asyncio.wait_for(futures[unreadable], timeout=30)
        finally:
            await kafka.stop()
    finally:
        await reader.stop()
    assert late.rejected and late.error_code is ErrorCode.UNSUPPORTED_SCHEMA_VERSION
    assert [r.getMessage() for r in caplog.records if r.name == "assetbus.receipts"] == [
        f"ignoring an unreadable receipt on {topics.receipts}"]
