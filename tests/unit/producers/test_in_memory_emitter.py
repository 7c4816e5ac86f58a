"""The test double answers like the persister, through the same asset-handle and emitter APIs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from assetbus.producers import Asset, AssetNotFound, AssetNotifier, Unauthorized, raise_for_rejection
from assetbus.producers.testing import InMemoryEmitter
from assetbus.schemas import AssetRef, ErrorCode, Provenance, SourceKind

orders = Asset("orders", "s3://bucket/orders/")


def load_orders() -> None:
    """A task as a user writes it."""
    for day in (1, 2):
        orders.emit(extra={"rows": 100}, partition_key=f"2026-10-0{day}",
                    partition_date=datetime(2026, 10, day, tzinfo=UTC), dedupe_key=f"batch-{day}")


def test_a_task_under_test_emits_into_the_double() -> None:
    bus = InMemoryEmitter(registered=[orders])
    with bus.task(dag_id="ingest", run_id="run-1", task_id="load"):
        load_orders()
    assert [e.partition_key for e in bus.emitted(orders)] == ["2026-10-01", "2026-10-02"]
    assert all(r.accepted for r in bus.receipts)
    assert bus.events[0].source.task_id == "load"


def test_a_retry_re_emitting_a_dedupe_key_is_a_duplicate_of_the_first_event() -> None:
    bus = InMemoryEmitter()
    with bus.task(try_number=1):
        first = orders.emit(dedupe_key="batch-41")
    with bus.task(try_number=2):
        again = orders.emit(dedupe_key="batch-41")
    assert first.accepted and again.duplicate
    assert (again.event_id, again.timestamp) == (first.event_id, first.timestamp)
    assert len(bus.events) == 1


def test_the_same_command_answered_again_is_accepted_with_its_event() -> None:
    bus = InMemoryEmitter()
    with bus.task():
        first = orders.emit(dedupe_key="batch-41")
    again = bus.answer(bus.commands[0])  # a resend: the same command id
    assert again.accepted and (again.event_id, again.timestamp) == (first.event_id, first.timestamp)
    assert len(bus.events) == 1


def test_the_same_dedupe_key_in_another_task_is_a_new_event() -> None:
    bus = InMemoryEmitter()
    with bus.task(task_id="a"):
        orders.emit(dedupe_key="batch-41")
    with bus.task(task_id="b"):
        assert orders.emit(dedupe_key="batch-41").accepted


def test_unregistered_assets_raise_asset_not_found_or_return_a_rejected_receipt() -> None:
    bus = InMemoryEmitter(registered=[orders])
    nowhere = Asset("nowhere", "s3://nowhere/")
    with bus.task():
        with pytest.raises(AssetNotFound):
            nowhere.emit()
        assert nowhere.emit(raise_on_reject=False).error_code is ErrorCode.ASSET_NOT_FOUND


def test_a_dag_run_callback_emits_without_task_fields() -> None:
    bus = InMemoryEmitter()
    with bus.dag_run(dag_id="ingest", run_id="run-1"):
        AssetNotifier(orders, extra={"action": "investigate"})({"run_id": "run-1", "reason": "task_failure"})
    event = bus.events[0]
    assert event.source == Provenance(kind=SourceKind.DAG, dag_id="ingest", run_id="run-1")
    assert event.extra == {"action": "investigate", "run": {"run_id": "run-1", "reason": "task_failure"}}


async def test_the_async_emitter_api_works_on_the_double() -> None:
    async with InMemoryEmitter() as bus:
        ref = AssetRef(name="orders", uri="s3://bucket/orders/")
        receipt = await bus.emit(ref, dedupe_key="batch-1")
        future = await bus.emit_nowait(ref, dedupe_key="batch-1")
        assert receipt.accepted and (await future).duplicate


async def test_the_async_handle_face_works_on_the_double() -> None:
    bus = InMemoryEmitter()
    with bus.task():
        receipt = await orders.aemit(partition_key="p1")
    assert receipt.accepted and bus.events[0].partition_key == "p1"


async def test_a_body_claiming_another_task_is_unauthorized() -> None:
    bus = InMemoryEmitter()
    command = bus.command(AssetRef(name="orders", uri="s3://bucket/orders/"))
    forged = command.model_copy(update={"source": command.source.model_copy(update={"task_id": "other"})})
    with pytest.raises(Unauthorized):
        raise_for_rejection(await bus.send(forged))
    assert bus.events == []
