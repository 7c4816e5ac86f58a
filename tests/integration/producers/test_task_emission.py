"""A running task emits through Kafka and the persister: receipts mean stored, failures retract nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.producers import Asset, AssetNotFound, task_token
from assetbus.schemas import Receipt, ReceiptStatus
from tests.integration.producers.emitted import TaskContext, stored_events


class Deliberate(RuntimeError):
    pass


async def test_a_task_emits_two_dated_partitions_then_fails_and_both_stay_stored(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    receipts: list[Receipt] = []

    def task() -> None:  # ordinary, synchronous task code
        with as_task(task_token(token_secret, "ingest", "run-1", "load_orders")):
            for day in (1, 2):
                receipts.append(orders.emit(extra={"rows": 100}, partition_key=f"2026-10-0{day}",
                                            partition_date=datetime(2026, 10, day, tzinfo=UTC),
                                            dedupe_key=f"batch-{day}"))
            raise Deliberate("the task fails after its two emissions")

    with pytest.raises(Deliberate):
        await asyncio.to_thread(task)

    assert [r.status for r in receipts] == [ReceiptStatus.ACCEPTED, ReceiptStatus.ACCEPTED]
    events = await stored_events(engine)
    assert [e["id"] for e in events] == [r.event_id for r in receipts]
    assert [e["partition_key"] for e in events] == ["2026-10-01", "2026-10-02"]
    assert events[0]["partition_date"] == datetime(2026, 10, 1, tzinfo=UTC)
    assert [(e["task_id"], e["try_number"], e["extra"]) for e in events] == [("load_orders", 1, {"rows": 100})] * 2


async def test_a_task_retry_re_emitting_batch_41_gets_a_duplicate_naming_the_first_event(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    def attempt(try_number: int) -> Receipt:
        with as_task(task_token(token_secret, "ingest", "run-1", "load_orders", try_number=try_number)):
            return orders.emit(extra={"rows": 100, "try": try_number}, dedupe_key="batch-41")

    first = await asyncio.to_thread(attempt, 1)
    retry = await asyncio.to_thread(attempt, 2)
    assert first.accepted and retry.duplicate
    assert (retry.event_id, retry.timestamp) == (first.event_id, first.timestamp)
    events = await stored_events(engine)
    assert len(events) == 1 and events[0]["try_number"] == 1


async def test_the_async_face_emits_without_blocking_the_callers_loop(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    with as_task(task_token(token_secret, "ingest", "run-1", "load_orders")):
        receipt = await orders.aemit(partition_key="2026-10-03", dedupe_key="batch-3")
        pending = [await orders.aemit_nowait(dedupe_key=f"nowait-{i}") for i in range(20)]
    done = await asyncio.gather(*pending)
    assert receipt.accepted and all(r.accepted for r in done)
    assert len(await stored_events(engine)) == 21


async def test_an_unregistered_asset_raises_asset_not_found_with_its_receipt(
    as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    nowhere = Asset("nowhere", "s3://nowhere/")

    def task() -> Receipt:
        with as_task(task_token(token_secret, "ingest", "run-1", "load_orders")):
            quiet = nowhere.emit(raise_on_reject=False)
            with pytest.raises(AssetNotFound) as raised:
                nowhere.emit()
            assert raised.value.receipt.rejected
            return quiet

    receipt = await asyncio.to_thread(task)
    assert receipt.status is ReceiptStatus.REJECTED and receipt.error_code == "asset_not_found"
    assert await stored_events(engine) == []
