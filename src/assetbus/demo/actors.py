"""The actors of `assetbus demo`: an ingestion task, a failing DAG's callback, and three consumer DAGs.

Each prints what it does through `show(actor, text)`; the story's shared state is a `DemoState`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from assetbus.consumers.scheduler.tzcalendar import hours_of_day
from assetbus.producers import AsyncEmitter
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import AssetRef, Provenance, ReadinessSignal, Receipt, Topics

Show = Callable[[str, str], None]
"""show(actor, text): one line of the story."""

ORDERS = AssetRef(name="demo.orders", uri="s3://demo-bucket/orders/")
INCIDENTS = AssetRef(name="demo.incidents", uri="s3://demo-bucket/incidents/")
ZONE = "Europe/Amsterdam"
DAY = date(2026, 10, 1)
FIRST_BATCH = 40
WRITE_S = 0.12
"""How long the ingestion task "writes" one batch before committing it."""

PER_BATCH_DAG, DAILY_DAG, INCIDENT_DAG = "demo.orders_per_batch", "demo.orders_daily", "demo.incident_triage"


def batch_hours() -> list[datetime]:
    """One batch per hourly file: all hours of 1 October (Amsterdam), then the first two of 2 October."""
    return [*hours_of_day(DAY, ZONE), *hours_of_day(DAY + timedelta(days=1), ZONE)[:2]]


@dataclass
class DemoState:
    ingest_run: str
    export_run: str
    writing_batch: int = 0
    overlap: tuple[int, int] | None = None
    """(batch the consumer processed, batch the producer was writing meanwhile)."""
    receipts: dict[str, list[Receipt]] = field(default_factory=dict)
    task_error: str | None = None
    producer_ahead: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the producer is writing the batch two after FIRST_BATCH + 1."""

    def mine(self, signal: ReadinessSignal) -> bool:
        """Signals of this demo run (a rerun's subscribers may still see older ones)."""
        return any(e.source.run_id in (self.ingest_run, self.export_run) for e in signal.events)


def provenance(source: Provenance) -> str:
    if source.task_id is None:
        return f"{source.dag_id}/{source.run_id} (DAG-level: no task)"
    return f"{source.dag_id}/{source.run_id}/{source.task_id}#{source.try_number}"


def local(when: datetime | None) -> str:
    return when.astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M %Z") if when else "-"


async def ingest_orders(emitter: AsyncEmitter, state: DemoState, show: Show) -> None:
    """The producer task `ingest_orders.load_orders`: commit a batch, emit it; then fail on purpose."""
    receipts = state.receipts.setdefault("ingest_orders", [])
    hours = batch_hours()
    for index, hour in enumerate(hours):
        batch = FIRST_BATCH + index
        state.writing_batch = batch
        if batch >= FIRST_BATCH + 3:
            state.producer_ahead.set()
        await asyncio.sleep(WRITE_S)  # writing the batch's file
        fields = {"extra": {"rows": 1000 + index, "path": f"s3://demo-bucket/orders/{hour:%Y/%m/%d/%H}.parquet"},
                  "partition_key": f"batch-{batch}", "partition_date": hour, "dedupe_key": f"batch-{batch}"}
        receipt = await emitter.emit(ORDERS, raise_on_reject=False, **fields)  # type: ignore[arg-type]
        receipts.append(receipt)
        show("ingest_orders", f"batch {batch} committed ({local(hour)}) → {receipt.status.value}, "
                              f"event {receipt.event_id}")
        if batch == FIRST_BATCH + 2:  # a retry emits the same batch again: another command, the same dedupe key
            again = await emitter.emit(ORDERS, raise_on_reject=False, **fields)  # type: ignore[arg-type]
            receipts.append(again)
            show("ingest_orders", f"batch {batch} sent again (a retry) → {again.status.value} of event "
                                  f"{again.event_id}: no new event, no new run")
    state.writing_batch = FIRST_BATCH + len(hours)
    state.producer_ahead.set()
    raise RuntimeError("the order API went away after batch "
                       f"{FIRST_BATCH + len(hours) - 1} (a deliberate failure)")


async def nightly_export(connection: KafkaConnection, token: str, state: DemoState, show: Show,
                         topics: Topics) -> None:
    """A DAG run that fails; its DAG-level failure callback emits an incident, with no task involved."""

    async def on_failure_callback(context: dict[str, str]) -> None:
        async with AsyncEmitter(connection, token, topics=topics, receipt_timeout_s=30) as emitter:
            receipt = await emitter.emit(INCIDENTS, extra={"reason": context["reason"], "action": "investigate"},
                                         raise_on_reject=False)
        state.receipts.setdefault("nightly_export", []).append(receipt)
        show("nightly_export", f"on_failure_callback emitted demo.incidents → {receipt.status.value}, "
                               f"event {receipt.event_id}")

    show("nightly_export", f"run {state.export_run} failed (deliberately: the export step timed out)")
    await on_failure_callback({"reason": "export step timed out", "run_id": state.export_run})


def consumer_handlers(state: DemoState, show: Show) -> dict[str, Callable[[ReadinessSignal], object]]:
    """The downstream services: what each consumer DAG does with its readiness signals."""

    async def per_batch(signal: ReadinessSignal) -> None:
        if not state.mine(signal):
            return
        event = signal.events[0]
        show("orders_per_batch", f"{signal.partition_key} · {local(signal.partition_date)} · "
                                 f"{provenance(event.source)} · event {event.event_id}")
        batch = int((signal.partition_key or "0").removeprefix("batch-"))
        if batch == FIRST_BATCH + 1:  # a slow batch: the producer keeps going meanwhile
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.producer_ahead.wait(), 15)
            state.overlap = (batch, state.writing_batch)
            show("orders_per_batch", f"done with batch {batch} while the producer is writing batch "
                                     f"{state.writing_batch}")

    async def daily(signal: ReadinessSignal) -> None:
        if not state.mine(signal):
            return
        sources = {provenance(e.source) for e in signal.events}
        show("orders_daily", f"day {signal.partition_key} · starts {local(signal.partition_date)} · "
                             f"{len(signal.events)} hourly batches from {', '.join(sorted(sources))}")

    async def incidents(signal: ReadinessSignal) -> None:
        if not state.mine(signal):
            return
        event = signal.events[0]
        show("incident_triage", f"incident from {provenance(event.source)} · event {event.event_id} "
                                "→ ticket opened")

    return {PER_BATCH_DAG: per_batch, DAILY_DAG: daily, INCIDENT_DAG: incidents}
