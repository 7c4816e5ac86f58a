"""Replay re-derives readiness from stored events: only missing runs, nothing on a dry run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.scheduler import (
    AssetWait,
    ConsumerDag,
    HourlyToDaily,
    Identity,
    ReplayRange,
    Scheduler,
    SchedulerConfig,
    ToUnpartitioned,
    replay,
)
from assetbus.consumers.scheduler.publish import ReadinessPublisher, create_producer
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage import count_events
from assetbus.consumers.storage.queue import pending_for_dag
from assetbus.consumers.storage.replay_targets import stored_events
from assetbus.consumers.storage.runs import RunRow
from assetbus.producers import AsyncEmitter
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

from .conftest import CLICKS, ORDERS

PER_BATCH = ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders", mapping=Identity()))
DAILY = ConsumerDag(dag_id="daily", schedule=AssetWait("clicks", mapping=HourlyToDaily("UTC")))
ALL_ORDERS = ConsumerDag(dag_id="all_orders", schedule=AssetWait("orders", mapping=ToUnpartitioned()))
DAY = datetime(2026, 10, 1, tzinfo=UTC)


async def stored(engine: AsyncEngine, count: int) -> None:
    async def enough() -> bool:
        async with engine.connect() as conn:
            return await count_events(conn) >= count

    await wait_for(enough, what=f"{count} stored events")


async def emit_all(emitter: AsyncEmitter, asset: AssetRef, fields: list[dict[str, object]]) -> None:
    futures = [await emitter.submit(emitter.command(asset, **f)) for f in fields]  # type: ignore[arg-type]
    assert all(r.accepted for r in await asyncio.gather(*futures))


async def test_replay_creates_only_the_missing_runs_and_a_dry_run_changes_nothing(
        define_dags: Callable[..., Awaitable[object]], scheduler_config: SchedulerConfig, emitter: AsyncEmitter,
        engine: AsyncEngine, runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    async with Scheduler(scheduler_config) as scheduler:
        # batches 1-5 are scheduled before the DAG exists: they are never queued for it
        await emit_all(emitter, ORDERS, [{"partition_key": f"batch-{n}", "dedupe_key": f"b{n}"} for n in range(1, 6)])
        await wait_for(lambda: _read(scheduler, 5), what="the scheduler to read the five events")
        await define_dags(PER_BATCH)
        # batches 1 and 2 are written again, live: they get runs
        await emit_all(emitter, ORDERS, [{"partition_key": f"batch-{n}", "dedupe_key": f"again-{n}"} for n in (1, 2)])
        await wait_for(lambda: _count(runs_of, 2), what="two live runs")
    live = {r.run_id for r in await runs_of("per_batch")}

    dry = await replay(engine, PER_BATCH, ReplayRange(), dry_run=True)
    assert {(t.target_key, t.action) for t in dry.targets} == {
        ("batch-1", "exists"), ("batch-2", "exists"), ("batch-3", "would create"), ("batch-4", "would create"),
        ("batch-5", "would create")}
    assert {r.run_id for r in await runs_of("per_batch")} == live
    async with engine.connect() as conn:
        assert await pending_for_dag(conn, "per_batch") == []

    report = await replay(engine, PER_BATCH, ReplayRange())
    runs = await runs_of("per_batch")
    assert report.runs == 3 and report.count("created") == 3
    assert sorted(r.partition_key or "" for r in runs if r.run_id not in live) == ["batch-3", "batch-4", "batch-5"]
    assert len(runs) == 5 and live <= {r.run_id for r in runs}
    assert {r.origin for r in runs if r.run_id not in live} == {"replay"}

    again = await replay(engine, PER_BATCH, ReplayRange())
    assert again.runs == 0 and again.count("exists") == 5


async def test_replay_of_a_roll_up_reports_the_incomplete_day_and_what_it_lacks(
        define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter, engine: AsyncEngine,
        runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    hours = [DAY + timedelta(hours=h) for h in range(26)]  # all of 1 October, two hours of 2 October
    await emit_all(emitter, CLICKS, [{"partition_key": h.isoformat(), "partition_date": h, "dedupe_key": f"h{i}"}
                                     for i, h in enumerate(hours)])
    await stored(engine, 26)
    await define_dags(DAILY)
    report = await replay(engine, DAILY, ReplayRange())
    outcome = {t.target_key: t for t in report.targets}
    assert (outcome["2026-10-01"].action, outcome["2026-10-01"].runs) == ("created", 1)
    assert outcome["2026-10-02"].action == "incomplete"
    assert [str(p) for p in outcome["2026-10-02"].missing] == ["clicks 2/24 hours"]
    (run,) = await runs_of("daily")
    assert report.runs == 1 and len(run.events) == 24


async def test_replay_selects_target_partitions_by_date_range_or_key(
        define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter, engine: AsyncEngine,
        runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    await emit_all(emitter, ORDERS, [{"partition_key": f"d{d}", "partition_date": DAY + timedelta(days=d),
                                      "dedupe_key": f"d{d}"} for d in range(5)])
    await stored(engine, 5)
    await define_dags(PER_BATCH)
    by_date = await replay(engine, PER_BATCH, ReplayRange(since=DAY + timedelta(days=1), until=DAY + timedelta(days=3)),
                           dry_run=True)
    assert sorted(t.target_key or "" for t in by_date.targets) == ["d1", "d2"]
    by_key = await replay(engine, PER_BATCH, ReplayRange(partitions=frozenset({"d4"})))
    assert by_key.runs == 1 and [r.partition_key for r in await runs_of("per_batch")] == ["d4"]


async def test_replayed_runs_are_signalled(
        infra: Settings, topics: Topics, define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter,
        engine: AsyncEngine, persister: Persister, runs_of: Callable[[str], Awaitable[list[RunRow]]],
        read_signals: Callable[[str, int], Awaitable[list[ReadinessSignal]]]) -> None:
    await emit_all(emitter, ORDERS, [{"partition_key": "batch-9", "dedupe_key": "b9"}])
    await stored(engine, 1)
    await define_dags(PER_BATCH)
    producer = create_producer(infra.kafka)
    await producer.start()
    try:
        publisher = ReadinessPublisher(producer, engine, topics, ReadinessTopics(infra.kafka, topics))
        report = await replay(engine, PER_BATCH, ReplayRange(), publisher=publisher)
    finally:
        await producer.stop()
    assert report.published == 1
    (signal,) = await read_signals("per_batch", 1)
    (run,) = await runs_of("per_batch")
    assert (signal.run_id, signal.partition_key, signal.origin) == (run.run_id, "batch-9", "replay")


async def test_replay_writes_and_publishes_chunk_by_chunk_and_reports_a_bounded_sample(
        define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter, engine: AsyncEngine,
        runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    await emit_all(emitter, ORDERS, [{"partition_key": f"b{n:02}", "dedupe_key": f"b{n}"} for n in range(30)])
    await stored(engine, 30)
    await define_dags(PER_BATCH)

    dry = await replay(engine, PER_BATCH, ReplayRange(), dry_run=True, page=7, chunk=4, sample=5)
    assert (dry.scanned, dry.runs, dry.count("would create")) == (30, 30, 30)
    assert [t.target_key for t in dry.targets] == ["b00", "b01", "b02", "b03", "b04"] and dry.left_out == 25

    publisher = RecordingPublisher(runs_of)
    report = await replay(engine, PER_BATCH, ReplayRange(), publisher=publisher, page=7, chunk=4, sample=5)
    assert (report.runs, report.count("created"), report.published) == (30, 30, 30)
    assert len(report.targets) == 5 and report.left_out == 25  # no list grows with the events
    assert publisher.batches == [4, 4, 4, 4, 4, 4, 4, 2]
    assert publisher.stored == [4, 8, 12, 16, 20, 24, 28, 30]  # each chunk written (and published) in turn
    assert len(await runs_of("per_batch")) == 30


async def test_replay_of_a_roll_up_whose_hours_are_stored_interleaved_gets_one_run_per_day(
        define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter, engine: AsyncEngine,
        runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    hours = [DAY + timedelta(days=d, hours=h) for h in range(24) for d in range(3)]  # 1, 2, 3 October in turn
    await emit_all(emitter, CLICKS, [{"partition_key": h.isoformat(), "partition_date": h, "dedupe_key": f"h{i}"}
                                     for i, h in enumerate(hours)])
    await stored(engine, 72)
    async with engine.connect() as conn:
        first = await stored_events(conn, ["clicks"], limit=6)
    assert len({e.partition_key[:10] for e in first if e.partition_key}) > 1  # days interleaved in id order
    await define_dags(DAILY)
    report = await replay(engine, DAILY, ReplayRange(), page=5, chunk=1)
    assert (report.scanned, report.runs, report.count("created"), report.count("incomplete")) == (72, 3, 3, 0)
    runs = await runs_of("daily")
    assert sorted(r.partition_key or "" for r in runs) == ["2026-10-01", "2026-10-02", "2026-10-03"]
    for run in runs:
        assert sorted(str(e["partition_key"])[:10] for e in run.events) == [run.partition_key] * 24


async def test_replay_of_unpartitioned_targets(
        define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter, engine: AsyncEngine,
        runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    await emit_all(emitter, ORDERS, [{"dedupe_key": "u1"}, {"partition_key": "batch-1", "dedupe_key": "k1"},
                                     {"dedupe_key": "u2"}])
    await stored(engine, 3)
    await define_dags(PER_BATCH, ALL_ORDERS)
    dry = await replay(engine, ALL_ORDERS, ReplayRange(), dry_run=True, page=1, chunk=1)
    assert [(t.target_key, t.events, t.action) for t in dry.targets] == [(None, 3, "would create")]

    per_batch = await replay(engine, PER_BATCH, ReplayRange(), page=1, chunk=1)
    assert {(t.target_key, t.events, t.action) for t in per_batch.targets} == {
        (None, 2, "created"), ("batch-1", 1, "created")}
    everything = await replay(engine, ALL_ORDERS, ReplayRange(), page=2, chunk=1)
    assert [(t.target_key, t.events, t.action, t.runs) for t in everything.targets] == [(None, 3, "created", 1)]
    assert {(r.partition_key, len(r.events)) for r in await runs_of("per_batch")} == {(None, 2), ("batch-1", 1)}
    assert [(r.partition_key, len(r.events)) for r in await runs_of("all_orders")] == [(None, 3)]

    again = await replay(engine, PER_BATCH, ReplayRange(), page=1, chunk=1)
    assert (again.runs, again.count("exists")) == (0, 2)


class RecordingPublisher:
    """Records how many runs each publish call got, and how many runs were stored by then."""

    def __init__(self, runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
        self.runs_of = runs_of
        self.batches: list[int] = []
        self.stored: list[int] = []

    async def publish(self, runs: Sequence[RunRow]) -> int:
        self.batches.append(len(runs))
        self.stored.append(len(await self.runs_of("per_batch")))
        return len(runs)


async def _count(runs_of: Callable[[str], Awaitable[list[RunRow]]], n: int) -> bool:
    return len(await runs_of("per_batch")) >= n


async def _read(scheduler: Scheduler, n: int) -> bool:
    return scheduler.stats.events >= n
