"""The scheduler killed -9 together with the broker leading its asset-events partition: one run per partition and
generation, every run signalled, after the broker comes back."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity, LoadedDag, LoadResult, sync_dags
from assetbus.consumers.storage.runs import RunRow, list_runs
from assetbus.schemas import AssetRef, EmissionCommand, ReadinessSignal, Topics
from tests.cluster.flow import spread_assets
from tests.cluster.harness import LocalCluster, create_replicated_topics, leader_of_key
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import PersisterProcess, commands, encoded, produce, read_topic
from tests.integration.consumers.scheduler.processes import start_scheduler

EVENTS = 400
DAG = "per_batch"


def partitioned(token: str, topics: Topics, asset: AssetRef, n: int) -> list[EmissionCommand]:
    """n commands of one asset, each for its own partition `batch-NNNN`."""
    return [c.model_copy(update={"partition_key": f"batch-{i:04d}"})
            for i, c in enumerate(commands(token, topics, asset, n, key="batch"))]


async def test_scheduler_killed_during_a_broker_failover_gives_one_run_per_partition_and_generation(
        cluster: LocalCluster, cluster_topics: Topics, engine: AsyncEngine, db_url: str, token: str,
        persisters: Callable[..., Awaitable[PersisterProcess]], tmp_path: Path) -> None:
    topics = cluster_topics
    asset = (await spread_assets(engine, partitions=1, per_partition=1))[0]
    await create_replicated_topics(cluster.connection(), {topics.readiness(DAG): 3})
    dag = ConsumerDag(dag_id=DAG, schedule=AssetWait(asset.name, mapping=Identity()))
    async with engine.begin() as conn:
        await sync_dags(conn, LoadResult(root="/dags/d.py", dags=[LoadedDag(dag, "/dags/d.py")]))

    victim = await leader_of_key(cluster.connection(), topics.asset_events, asset.name)  # the scheduler's input
    bootstrap = cluster.connection().bootstrap  # every node, the victim included
    await persisters(bootstrap)
    log = tmp_path / "scheduler.log"
    first = await start_scheduler(bootstrap, db_url, topics, log)
    second: asyncio.subprocess.Process | None = None

    async def runs() -> list[RunRow]:
        async with engine.connect() as conn:
            return await list_runs(conn, dag_id=DAG, limit=10_000)

    items = partitioned(token, topics, asset, EVENTS)
    everything = cluster.connection().bootstrap

    async def stream() -> None:
        for start in range(0, EVENTS, 20):  # about 200 events/s
            await produce(everything, topics.emissions, encoded(items[start:start + 20]))
            await asyncio.sleep(0.1)  # pacing of the stream, not a wait for a condition

    producing = asyncio.create_task(stream())
    try:
        async def some_runs() -> bool:
            return len(await runs()) >= 60

        await wait_for(some_runs, timeout_s=90, what=f"the first runs (log: {log})")
        cluster.kill(victim)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        at_kill = len(await runs())
        second = await start_scheduler(bootstrap, db_url, topics, log)
        await producing
        await cluster.restart()

        async def all_published() -> bool:
            found = await runs()
            return len(found) >= EVENTS and all(r.published for r in found)

        await wait_for(all_published, timeout_s=120, interval=0.5, what=f"{EVENTS} published runs (log: {log})")
    finally:
        producing.cancel()
        for process in (first, second):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
                await process.wait()

    found = await runs()
    assert at_kill < EVENTS, "the kills should land mid-stream"
    assert len(found) == EVENTS
    assert sorted(r.partition_key or "" for r in found) == [f"batch-{n:04d}" for n in range(EVENTS)]
    assert {r.generation for r in found} == {1}
    signals = [ReadinessSignal.model_validate_json(r.value) for r in await read_topic(
        everything, topics.readiness(DAG), lambda got: len({json.loads(r.value)["run_id"] for r in got}) >= EVENTS,
        timeout_s=60)]
    assert {s.run_id for s in signals} == {r.run_id for r in found}  # repeats, if any, carry the same run id
