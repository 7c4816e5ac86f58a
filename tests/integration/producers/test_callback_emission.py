"""Callbacks and notifiers emit with DAG-run provenance: dag and run set, task fields null."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.producers import Asset, AssetNotifier, dag_token, task_token
from assetbus.schemas import Receipt
from tests.integration.producers.emitted import TaskContext, stored_events

FAILED_RUN = {"dag_run": SimpleNamespace(dag_id="ingest", run_id="run-1", state="failed"),
              "reason": "task_failure"}


async def test_a_dag_failure_callback_emits_with_no_task_fields(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    def on_failure(context: dict[str, Any]) -> Receipt:
        return orders.emit(extra={"action": "investigate", "run_id": context["dag_run"].run_id})

    def callback_runner() -> Receipt:
        with as_task(dag_token(token_secret, "ingest", "run-1")):
            return on_failure(FAILED_RUN)

    receipt = await asyncio.to_thread(callback_runner)
    assert receipt.accepted
    [event] = await stored_events(engine)
    assert (event["source_kind"], event["dag_id"], event["run_id"]) == ("dag", "ingest", "run-1")
    assert (event["task_id"], event["map_index"], event["try_number"]) == (None, None, None)
    assert event["extra"] == {"action": "investigate", "run_id": "run-1"}


async def test_a_notifier_adapter_emits_the_same_way_with_references_to_the_run(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    notifier = AssetNotifier(orders, extra={"action": "clean up temp files"})

    def callback_runner() -> Receipt:
        with as_task(dag_token(token_secret, "ingest", "run-1")):
            return notifier(FAILED_RUN)

    receipt = await asyncio.to_thread(callback_runner)
    [event] = await stored_events(engine)
    assert event["id"] == receipt.event_id
    assert (event["source_kind"], event["task_id"], event["try_number"]) == ("dag", None, None)
    assert event["extra"] == {"action": "clean up temp files",
                              "run": {"dag_id": "ingest", "run_id": "run-1", "run_state": "failed",
                                      "reason": "task_failure"}}


async def test_a_task_level_callback_emits_as_its_task_attempt(
    orders: Asset, as_task: TaskContext, token_secret: str, engine: AsyncEngine
) -> None:
    notifier = AssetNotifier(orders, extra={"event": "retry"})

    async def retry_callback() -> Receipt:
        with as_task(task_token(token_secret, "ingest", "run-1", "load_orders", try_number=1)):
            return await notifier.async_call({"ti": SimpleNamespace(task_id="load_orders", try_number=1)})

    receipt = await retry_callback()
    [event] = await stored_events(engine)
    assert receipt.accepted
    assert (event["source_kind"], event["task_id"], event["try_number"]) == ("task", "load_orders", 1)
