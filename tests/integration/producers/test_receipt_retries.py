"""Receipts: a lost one is answered by resending the same command; fire-and-forget stays bounded."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import count_events
from assetbus.producers import Asset, AsyncEmitter, ReceiptTimeout, task_token
from assetbus.schemas import ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.producers.emitted import stored_events


async def test_a_lost_receipt_is_retried_with_the_same_command_and_stores_one_event(
    infra: Settings, topics: Topics, token_secret: str, persister: Persister, orders: Asset, engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load_orders")
    lost: list[bytes | None] = []
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=1.0,
                            attempts=10) as emitter:
        # the first send's receipt is thrown away
        monkeypatch.setattr(emitter.dispatcher.receipts, "_resolve", lost.append)
        future = await emitter.emit_nowait(orders.ref, dedupe_key="batch-41")

        async def stored_receipt_lost_and_resent() -> bool:
            async with engine.connect() as conn:
                stored = await count_events(conn, "orders") == 1
            return stored and len(lost) >= 1 and emitter.stats.resent >= 1

        await wait_for(stored_receipt_lost_and_resent,
                       what="the event stored, its receipt dropped and the command resent after the timeout")
        monkeypatch.undo()
        receipt = await asyncio.wait_for(future, 30)

    events = await stored_events(engine)
    assert receipt.status is ReceiptStatus.ACCEPTED  # the resend found its own event, stored by the first send
    assert [e["id"] for e in events] == [receipt.event_id]
    assert events[0]["dedupe_key"] == "batch-41"


async def test_with_no_receipt_at_all_the_future_fails_with_receipt_timeout(
    infra: Settings, topics: Topics, token_secret: str, persister: Persister, orders: Asset,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load_orders")
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=0.3,
                            attempts=2) as emitter:
        # every receipt is thrown away
        monkeypatch.setattr(emitter.dispatcher.receipts, "_resolve", lambda value: None)
        future = await emitter.emit_nowait(orders.ref)
        with pytest.raises(ReceiptTimeout) as raised:
            await asyncio.wait_for(future, 30)
        assert raised.value.attempts == 2 and raised.value.retriable
        assert not emitter.dispatcher._pending  # every slot is free again


async def test_fire_and_forget_never_holds_more_than_max_in_flight_commands(
    infra: Settings, topics: Topics, token_secret: str, persister: Persister, orders: Asset, engine: AsyncEngine
) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load_orders")
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20,
                            max_in_flight=8) as emitter:
        futures = [await emitter.emit_nowait(orders.ref, dedupe_key=f"batch-{i}") for i in range(60)]
        receipts = await asyncio.gather(*futures)
        assert emitter.stats.peak_in_flight <= 8
    assert all(r.accepted for r in receipts)
    async with engine.connect() as conn:
        assert await count_events(conn, "orders") == 60
