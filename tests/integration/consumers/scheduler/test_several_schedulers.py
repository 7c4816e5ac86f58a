"""Three schedulers in one group share the asset-events topic by partition: a roll-up whose assets sit on
different partitions (so on different schedulers) still gets exactly one run, and a scheduler killed -9
mid-stream leaves one run per partition, every one signalled."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AllOf, AssetWait, ConsumerDag, HourlyToDaily, Identity, Scheduler
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.runs import RunRow
from assetbus.producers import AsyncEmitter
from assetbus.producers.kafka.sender import partition_for
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.scheduler.processes import start_scheduler

from .conftest import CUSTOMERS, ORDERS

RunsOf = Callable[[str], Awaitable[list[RunRow]]]
ASSET_EVENT_PARTITIONS = 6


@contextlib.asynccontextmanager
async def three(config: SchedulerConfig) -> AsyncIterator[list[Scheduler]]:
    """Three in-process schedulers in one group, each with partitions assigned (the group settled)."""
    async with contextlib.AsyncExitStack() as stack:
        running = [await stack.enter_async_context(Scheduler(config)) for _ in range(3)]

        async def settled() -> bool:
            owned = [s.shell.consumer.assignment() if s.shell.consumer else set() for s in running]
            return all(owned) and sum(len(o) for o in owned) == ASSET_EVENT_PARTITIONS

        await wait_for(settled, timeout_s=60, what="three schedulers sharing the asset-events partitions")
        yield running


async def test_a_roll_up_over_assets_on_two_schedulers_runs_exactly_once(
        define_dags: Callable[..., Awaitable[object]], scheduler_config: SchedulerConfig, emitter: AsyncEmitter,
        runs_of: RunsOf) -> None:
    assert partition_for(b"orders", range(6)) != partition_for(b"customers", range(6))
    await define_dags(ConsumerDag(dag_id="joined_daily", schedule=AllOf(
        AssetWait("orders", mapping=HourlyToDaily("UTC")), AssetWait("customers", mapping=HourlyToDaily("UTC")))))
    day = datetime(2026, 10, 1, tzinfo=UTC)
    async with three(scheduler_config) as schedulers:
        futures = []
        for hour in range(24):  # both assets' hours interleaved, the last hour of each at the end
            when = day + timedelta(hours=hour)
            for asset in (ORDERS, CUSTOMERS):
                futures.append(await emitter.submit(emitter.command(
                    asset, partition_key=when.isoformat(), partition_date=when, dedupe_key=f"{asset.name}-{hour}")))
        assert all(r.accepted for r in await asyncio.gather(*futures))

        async def all_read() -> bool:
            return sum(s.stats.events for s in schedulers) >= 48

        await wait_for(all_read, what="the 48 events applied across the schedulers")
        busy = [s for s in schedulers if s.stats.events]
        runs = await runs_of("joined_daily")
    assert len(busy) == 2, "orders and customers should be applied by two different schedulers"
    assert [(r.partition_key, r.generation, len(r.events)) for r in runs] == [("2026-10-01", 1, 48)]


STREAMS = [AssetRef(name=name, uri=f"s3://bucket/{name}/")  # one per asset-events partition, 0 to 5
           for name in ("stream-16", "stream-3", "stream-2", "stream-11", "stream-1", "stream-0")]


async def test_one_of_three_schedulers_killed_leaves_one_run_per_partition_all_signalled(
        infra: Settings, db_url: str, topics: Topics, tmp_path: Path, engine: AsyncEngine,
        define_dags: Callable[..., Awaitable[object]], emitter: AsyncEmitter, runs_of: RunsOf,
        read_signals: Callable[[str, int], Awaitable[list[ReadinessSignal]]]) -> None:
    """Every partition is busy, so the killed scheduler had work in flight whichever two it owned."""
    assets = STREAMS
    assert sorted(partition_for(a.name.encode(), range(6)) for a in assets) == list(range(6))
    async with engine.begin() as conn:
        for asset in assets:
            await register_asset(conn, asset.name, asset.uri)
    await define_dags(*[ConsumerDag(dag_id=f"each_{a.name}", schedule=AssetWait(a.name, mapping=Identity()))
                        for a in assets])
    per_asset = 100
    logs = [tmp_path / f"scheduler-{n}.log" for n in range(3)]
    processes = [await start_scheduler(infra.bootstrap_servers, db_url, topics, log) for log in logs]

    async def all_runs(count: int) -> bool:
        return all([len(await runs_of(f"each_{a.name}")) >= count for a in assets])

    try:
        for asset in assets:
            await emitter.emit(asset, partition_key="batch-0000", dedupe_key="batch-0")
        await wait_for(lambda: all_runs(1), timeout_s=60, what=f"the schedulers to start (logs: {logs})")

        async def produce() -> None:
            for n in range(1, per_asset):
                for asset in assets:
                    await emitter.submit(emitter.command(asset, partition_key=f"batch-{n:04d}", dedupe_key=f"b{n}"))
                await asyncio.sleep(0.1)  # about 60 events/s over six assets, for about 10 s

        producing = asyncio.create_task(produce())
        try:
            await wait_for(lambda: all_runs(10), timeout_s=30, what="the first runs")
            victim = processes[0]
            victim.send_signal(signal.SIGKILL)
            await victim.wait()
            at_kill = sum([len(await runs_of(f"each_{a.name}")) for a in assets])
            await producing

            async def every_run_published() -> bool:
                for asset in assets:
                    runs = await runs_of(f"each_{asset.name}")
                    if len(runs) < per_asset or not all(r.published for r in runs):
                        return False
                return True

            await wait_for(every_run_published, timeout_s=90, what=f"every run published (logs: {logs})")
        finally:
            producing.cancel()
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            await process.wait()

    assert at_kill < per_asset * len(assets), "the kill should land mid-stream"
    for asset in assets:
        runs = await runs_of(f"each_{asset.name}")
        assert sorted(r.partition_key or "" for r in runs) == [f"batch-{n:04d}" for n in range(per_asset)]
        assert {r.generation for r in runs} == {1}
        signals = await read_signals(f"each_{asset.name}", per_asset)
        assert {s.run_id for s in signals} == {r.run_id for r in runs}
