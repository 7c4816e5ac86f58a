"""Accepted, duplicate and rejected receipts through a running persister, real Kafka and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import count_events
from assetbus.producers import AsyncEmitter, EmissionRejected, task_token
from assetbus.schemas import AssetRef, ErrorCode, ReceiptStatus, Topics
from assetbus.settings import Settings


@pytest.fixture
async def emitter(infra: Settings, topics: Topics, token_secret: str,
                  persister: Persister) -> AsyncIterator[AsyncEmitter]:
    token = task_token(token_secret, "ingest", "run-1", "load", try_number=1)
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as running:
        yield running


async def test_new_emission_is_accepted_and_stored(emitter: AsyncEmitter, orders: AssetRef,
                                                   engine: AsyncEngine) -> None:
    receipt = await emitter.emit(orders, extra={"rows": 100}, partition_key="2026-10-01",
                                 partition_date=datetime(2026, 10, 1, tzinfo=UTC), dedupe_key="batch-41")
    assert receipt.status is ReceiptStatus.ACCEPTED
    assert receipt.event_id is not None and receipt.timestamp is not None
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 1


async def test_same_dedupe_key_twice_is_duplicate_with_original_id_and_time(emitter: AsyncEmitter,
                                                                          orders: AssetRef,
                                                                          engine: AsyncEngine) -> None:
    first = await emitter.emit(orders, dedupe_key="batch-41")
    second = await emitter.emit(orders, dedupe_key="batch-41")
    assert first.accepted and second.duplicate
    assert (second.event_id, second.timestamp) == (first.event_id, first.timestamp)
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 1


async def test_unregistered_asset_is_rejected_with_asset_not_found(emitter: AsyncEmitter,
                                                                  engine: AsyncEngine) -> None:
    receipt = await emitter.emit(AssetRef(name="nope", uri="s3://nope/"), raise_on_reject=False)
    assert receipt.status is ReceiptStatus.REJECTED
    assert receipt.error_code is ErrorCode.ASSET_NOT_FOUND
    with pytest.raises(EmissionRejected) as raised:
        await emitter.emit(AssetRef(name="nope", uri="s3://nope/"))
    assert raised.value.code is ErrorCode.ASSET_NOT_FOUND
    async with engine.connect() as conn:
        assert await count_events(conn) == 0


async def test_matching_name_with_another_uri_is_asset_not_found(emitter: AsyncEmitter, orders: AssetRef) -> None:
    receipt = await emitter.emit(AssetRef(name=orders.name, uri="s3://elsewhere/"), raise_on_reject=False)
    assert receipt.error_code is ErrorCode.ASSET_NOT_FOUND
