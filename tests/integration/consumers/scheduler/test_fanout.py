"""Fan-out through the real pipeline: emitter → persister → scheduler → readiness topic and consumer runs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import (
    AllOf,
    AssetWait,
    ConsumerDag,
    HourlyToDaily,
    Identity,
    Scheduler,
    SchedulerConfig,
    ToUnpartitioned,
)
from assetbus.consumers.scheduler.tzcalendar import hours_of_day
from assetbus.consumers.storage.runs import RunRow
from assetbus.producers import AsyncEmitter
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import replaced, wait_for

from .conftest import CLICKS, CUSTOMERS, ORDERS

RunsOf = Callable[[str], Awaitable[list[RunRow]]]
Define = Callable[..., Awaitable[object]]


async def wait_runs(runs_of: RunsOf, dag_id: str, count: int) -> list[RunRow]:
    async def enough() -> list[RunRow] | None:
        runs = await runs_of(dag_id)
        return runs if len(runs) >= count else None

    return await wait_for(enough, what=f"{count} runs of {dag_id}")


async def emit_all(emitter: AsyncEmitter, asset: AssetRef, fields: list[dict[str, object]]) -> None:
    """Emit concurrently; every receipt must be accepted."""
    futures = [await emitter.submit(emitter.command(asset, **f)) for f in fields]  # type: ignore[arg-type]
    assert all(r.accepted for r in await asyncio.gather(*futures))


async def test_three_batches_make_three_runs_and_signals_in_order_per_key(
        define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter, runs_of: RunsOf,
        read_signals: Callable[[str, int], Awaitable[list[ReadinessSignal]]]) -> None:
    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders", mapping=Identity())))
    for n in (1, 2, 3):
        await emitter.emit(ORDERS, partition_key=f"batch-{n}", dedupe_key=f"batch-{n}")
    await wait_runs(runs_of, "per_batch", 3)  # else both writes of batch 1 may wait together: one run (below)
    await emitter.emit(ORDERS, partition_key="batch-1", dedupe_key="batch-1-rerun")  # batch 1 written again
    runs = await wait_runs(runs_of, "per_batch", 4)
    assert [(r.partition_key, r.generation) for r in runs] == [("batch-1", 1), ("batch-2", 1), ("batch-3", 1),
                                                               ("batch-1", 2)]
    signals = await read_signals("per_batch", 4)
    assert {s.run_id for s in signals} == {r.run_id for r in runs}
    batch_1 = [s.generation for s in signals if s.partition_key == "batch-1"]
    assert batch_1 == [1, 2]
    assert all(len(s.events) == 1 and s.events[0].source.task_id == "load" for s in signals)


async def test_two_queued_writes_of_one_partition_make_one_run_holding_both(
        define_dags: Define, scheduler_config: SchedulerConfig, emitter: AsyncEmitter, runs_of: RunsOf) -> None:
    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders", mapping=Identity())))
    first, second, again = [(await emitter.emit(ORDERS, partition_key=key, dedupe_key=dedupe_key)).event_id
                            for key, dedupe_key in (("batch-1", "b1"), ("batch-2", "b2"), ("batch-1", "b1-rerun"))]
    async with Scheduler(scheduler_config):  # started only now: the three events arrive in one batch
        runs = await wait_runs(runs_of, "per_batch", 2)
    assert [(r.partition_key, r.generation, [e["event_id"] for e in r.events]) for r in runs] == [
        ("batch-1", 1, [first, again]), ("batch-2", 1, [second])]


async def test_five_queued_unpartitioned_events_coalesce_into_one_run(
        define_dags: Define, scheduler_config: SchedulerConfig, emitter: AsyncEmitter, runs_of: RunsOf) -> None:
    await define_dags(ConsumerDag(dag_id="coalesced", schedule=AssetWait("orders", mapping=ToUnpartitioned())))
    await emit_all(emitter, ORDERS, [{"dedupe_key": f"e{i}"} for i in range(5)])
    async with Scheduler(scheduler_config):  # the run is created only now, with all five queued
        (run,) = await wait_runs(runs_of, "coalesced", 1)
    assert run.partition_key is None and len(run.events) == 5


async def test_one_run_per_event_policy_gives_five_runs(
        define_dags: Define, scheduler_config: SchedulerConfig, emitter: AsyncEmitter, runs_of: RunsOf) -> None:
    await define_dags(ConsumerDag(dag_id="each", schedule=AssetWait("orders", mapping=ToUnpartitioned()),
                                  coalesce=False))
    await emit_all(emitter, ORDERS, [{"dedupe_key": f"e{i}"} for i in range(5)])
    async with Scheduler(scheduler_config):
        runs = await wait_runs(runs_of, "each", 5)
    assert [r.generation for r in runs] == [1, 2, 3, 4, 5]
    assert all(len(r.events) == 1 for r in runs)


async def test_all_of_two_assets_runs_once_both_have_arrived(
        define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter, runs_of: RunsOf,
        wait_queued: Callable[[str, int], Awaitable[None]]) -> None:
    await define_dags(ConsumerDag(dag_id="joined", schedule=AllOf(AssetWait("orders"), AssetWait("customers"))))
    await emitter.emit(ORDERS, partition_key="2026-10-01", dedupe_key="o")
    await wait_queued("joined", 1)
    assert await runs_of("joined") == []
    await emitter.emit(CUSTOMERS, partition_key="2026-10-01", dedupe_key="c")
    (run,) = await wait_runs(runs_of, "joined", 1)
    assert run.partition_key == "2026-10-01"
    assert sorted(e["asset_name"] for e in run.events) == ["customers", "orders"]


@pytest.mark.parametrize(("day", "hours"), [(date(2026, 10, 1), 24), (date(2026, 3, 29), 23),
                                            (date(2026, 10, 25), 25)], ids=["24h", "dst-23h", "dst-25h"])
async def test_a_daily_roll_up_is_ready_only_after_the_last_hour_of_the_day(
        day: date, hours: int, define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter, runs_of: RunsOf,
        wait_queued: Callable[[str, int], Awaitable[None]]) -> None:
    await define_dags(ConsumerDag(dag_id="daily", schedule=AssetWait("clicks",
                                                                     mapping=HourlyToDaily("Europe/Amsterdam"))))
    starts = hours_of_day(day, "Europe/Amsterdam")
    assert len(starts) == hours
    fields = [{"partition_key": h.astimezone(UTC).isoformat(), "partition_date": h, "dedupe_key": f"h{i}"}
              for i, h in enumerate(starts)]
    await emit_all(emitter, CLICKS, fields[:-1])
    await wait_queued("daily", hours - 1)
    assert await runs_of("daily") == []
    await emit_all(emitter, CLICKS, fields[-1:])
    (run,) = await wait_runs(runs_of, "daily", 1)
    assert run.partition_key == day.isoformat() and len(run.events) == hours
    assert run.partition_date == starts[0]


async def test_an_unmappable_event_is_recorded_as_a_skip_and_the_scheduler_goes_on(
        define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter, runs_of: RunsOf, engine: AsyncEngine,
        wait_queued: Callable[[str, int], Awaitable[None]]) -> None:
    from assetbus.consumers.storage.queue import list_skips

    await define_dags(ConsumerDag(dag_id="daily", schedule=AssetWait("clicks", mapping=HourlyToDaily("UTC"))),
                      ConsumerDag(dag_id="per_batch", schedule=AssetWait("clicks")))
    await emitter.emit(CLICKS, partition_key="batch-7", dedupe_key="no-date")  # no hour for the roll-up
    five = datetime(2026, 10, 1, 5, tzinfo=UTC)
    await emitter.emit(CLICKS, partition_key=five.isoformat(), partition_date=five, dedupe_key="next")
    await wait_runs(runs_of, "per_batch", 2)
    await wait_queued("daily", 1)

    async def skipped() -> list[object]:
        async with engine.connect() as conn:
            return await list_skips(conn, "daily")  # type: ignore[return-value]

    (skip,) = await wait_for(skipped, what="the skip")
    assert (skip.reason, skip.partition_key) == ("no_partition_time", "batch-7")  # type: ignore[attr-defined]


async def test_reading_every_event_again_creates_no_run_twice(
        define_dags: Define, scheduler_config: SchedulerConfig, emitter: AsyncEmitter, runs_of: RunsOf) -> None:

    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders")))
    await emit_all(emitter, ORDERS, [{"partition_key": f"b{i}", "dedupe_key": f"b{i}"} for i in range(10)])
    async with Scheduler(scheduler_config):
        await wait_runs(runs_of, "per_batch", 10)
    again = replaced(scheduler_config, group_id=scheduler_config.group_id + "-again")  # rereads from the start
    async with Scheduler(again) as second:
        await wait_for(lambda: _at_least(second, 10), what="the second scheduler to read every event")
    assert len(await runs_of("per_batch")) == 10


async def test_an_event_ready_on_its_own_is_held_by_its_run_not_queued(
        define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter, runs_of: RunsOf, engine: AsyncEngine,
        wait_queued: Callable[[str, int], Awaitable[None]]) -> None:
    """A per-event DAG writes the run only; a roll-up's hours wait as queue entries; lineage finds both."""
    from sqlalchemy import text

    from assetbus.consumers.storage.runs import event_lineage

    await define_dags(ConsumerDag(dag_id="daily", schedule=AssetWait("clicks", mapping=HourlyToDaily("UTC"))),
                      ConsumerDag(dag_id="per_event", schedule=AssetWait("clicks"), coalesce=False))
    five = datetime(2026, 10, 1, 5, tzinfo=UTC)
    receipt = await emitter.emit(CLICKS, partition_key=five.isoformat(), partition_date=five, dedupe_key="h5")
    assert receipt.event_id is not None
    (run,) = await wait_runs(runs_of, "per_event", 1)
    await wait_queued("daily", 1)
    async with engine.connect() as conn:
        queued = (await conn.execute(text("SELECT dag_id FROM partition_queue"))).scalars().all()
        held = (await conn.execute(text("SELECT event_id FROM consumer_runs WHERE run_id = :r"),
                                   {"r": run.run_id})).scalar_one()
        lineage = await event_lineage(conn, receipt.event_id)
    assert queued == ["daily"] and held == receipt.event_id
    assert [r.run_id for r in lineage.runs] == [run.run_id]
    assert [(w.dag_id, w.target_key) for w in lineage.waiting] == [("daily", "2026-10-01")]


async def _at_least(scheduler: Scheduler, events: int) -> bool:
    return scheduler.stats.events >= events


async def test_an_event_this_database_does_not_hold_is_skipped(
        infra: Settings, topics: Topics, define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter,
        runs_of: RunsOf) -> None:
    """A topic shared with another database carries ids that mean other events here: never a redelivery."""
    import uuid

    from aiokafka import AIOKafkaProducer

    from assetbus.schemas import AssetEvent, Provenance, SourceKind

    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders")))
    receipt = await emitter.emit(ORDERS, partition_key="batch-1", dedupe_key="b1")
    await wait_runs(runs_of, "per_batch", 1)
    impostor = AssetEvent(event_id=receipt.event_id or 0, asset=ORDERS, partition_key="batch-x", dedupe_key="x",
                          command_id=uuid.uuid4(), source=Provenance(kind=SourceKind.DAG, dag_id="d", run_id="r"),
                          timestamp=datetime.now(UTC))
    producer = AIOKafkaProducer(bootstrap_servers=infra.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(topics.asset_events, impostor.model_dump_json().encode(), key=b"orders")
    finally:
        await producer.stop()
    await wait_for(lambda: _foreign(scheduler), what="the impostor to be skipped")
    assert [r.partition_key for r in await runs_of("per_batch")] == ["batch-1"]


async def _foreign(scheduler: Scheduler) -> bool:
    return scheduler.stats.foreign >= 1
