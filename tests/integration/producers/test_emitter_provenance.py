"""Provenance comes from the token: a body claiming another task is rejected; bad input never leaves."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.producers import (
    Asset,
    AsyncEmitter,
    InvalidEmission,
    NoEmissionContext,
    Unauthorized,
    UnknownAsset,
    raise_for_rejection,
    task_context,
    task_token,
)
from assetbus.schemas import ErrorCode, Topics
from assetbus.settings import Settings
from tests.integration.producers.emitted import TaskContext, stored_events


async def test_a_token_for_task_a_with_a_body_claiming_task_b_is_unauthorized(
    infra: Settings, topics: Topics, token_secret: str, persister: Persister, orders: Asset, engine: AsyncEngine
) -> None:
    token_a = task_token(token_secret, "ingest", "run-1", "task_a")
    async with AsyncEmitter(infra.bootstrap_servers, token_a, topics=topics, receipt_timeout_s=20) as emitter:
        command = emitter.command(orders.ref, dedupe_key="batch-41")
        claims_b = command.model_copy(update={"source": command.source.model_copy(update={"task_id": "task_b"})})
        receipt = await emitter.send(claims_b)
    assert receipt.rejected and receipt.error_code is ErrorCode.UNAUTHORIZED
    with pytest.raises(Unauthorized) as raised:
        raise_for_rejection(receipt)
    assert raised.value.receipt is receipt
    assert await stored_events(engine) == []


async def test_client_side_errors_send_nothing_and_a_valid_emission_after_them_is_the_only_event(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSETBUS_TOKEN", raising=False)
    with pytest.raises(NoEmissionContext):  # e.g. at import time of a DAG file
        orders.emit()

    def task() -> int | None:
        with as_task(task_token(token_secret, "ingest", "run-1", "load_orders")):
            with pytest.raises(InvalidEmission, match="time-zone aware"):
                orders.emit(partition_key="2026-10-01", partition_date=datetime(2026, 10, 1))
            with pytest.raises(InvalidEmission, match="requires partition_key"):
                orders.emit(partition_date=datetime(2026, 10, 1).astimezone())
            with pytest.raises(InvalidEmission, match="JSON"):
                orders.emit(extra={"handle": object()})
            with pytest.raises(InvalidEmission, match="limit"):
                orders.emit(extra={"log": "x" * 70_000})
            return orders.emit(dedupe_key="valid").event_id

    event_id = await asyncio.to_thread(task)
    assert [e["id"] for e in await stored_events(engine)] == [event_id]


async def test_an_undeclared_asset_is_refused_before_it_reaches_the_broker(
    infra: Settings, topics: Topics, token_secret: str, orders: Asset, running: Persister, engine: AsyncEngine
) -> None:
    refunds = Asset("refunds", "s3://bucket/refunds/")
    token = task_token(token_secret, "ingest", "run-1", "load_orders")

    def task() -> None:
        with task_context(token, bootstrap_servers=infra.bootstrap_servers, topic_prefix=topics.prefix,
                          outlets=[orders]):
            with pytest.raises(UnknownAsset):
                refunds.emit()
            orders.emit()

    await asyncio.to_thread(task)
    assert [e["asset_name"] for e in await stored_events(engine)] == ["orders"]
