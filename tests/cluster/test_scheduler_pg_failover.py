"""kill -9 of the PostgreSQL primary and promotion of its synchronous standby while the persister and the scheduler
work on a stream of partitioned emissions: one run per partition in the new primary, every run signalled, no signal
for a run the new primary lacks."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity, LoadedDag, LoadResult, sync_dags
from assetbus.consumers.storage import create_engine
from assetbus.consumers.storage.runs import RunRow, list_runs
from assetbus.schemas import ReadinessSignal, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.cluster.flow import Flow, failover_figures, read_receipts, spread_assets, stream
from tests.cluster.harness import group_members
from tests.cluster.pg_pair import PgPair
from tests.cluster.test_scheduler_failover import partitioned
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import PersisterProcess, read_topic, stored_count
from tests.integration.consumers.scheduler.processes import start_scheduler

EVENTS = 1_200
RATE_PER_S = 300.0
DAG = "per_batch"


async def runs_of(engine: AsyncEngine) -> list[RunRow]:
    async with engine.connect() as conn:
        return await list_runs(conn, dag_id=DAG, limit=10_000)


async def test_a_primary_kill_and_standby_promotion_gives_one_signalled_run_per_partition(
        pg_pair: PgPair, infra: Settings, topics: Topics, token: str, token_secret: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    connection = infra.kafka
    engine = create_engine(pg_pair.url)  # the multi-host URL: it follows the promotion (pre-ping reconnects)
    try:
        asset = (await spread_assets(engine, partitions=1, per_partition=1))[0]
        dag = ConsumerDag(dag_id=DAG, schedule=AssetWait(asset.name, mapping=Identity()))
        async with engine.begin() as conn:
            await sync_dags(conn, LoadResult(root="/dags/d.py", dags=[LoadedDag(dag, "/dags/d.py")]))
        await ensure_topics(connection, topics, {topics.readiness(DAG): 3})
        persister = PersisterProcess(bootstrap=connection.bootstrap, db_url=pg_pair.url, topics=topics,
                                     token_secret=token_secret, group_id=f"{topics.prefix}-persister",
                                     log_dir=tmp_path, args=("--max-records", "200"))
        await persister.start()
        log = tmp_path / "scheduler.log"
        scheduler = await start_scheduler(connection.bootstrap, pg_pair.url, topics, log)
        flow, stop, killed_at, runs_at_kill = Flow(), asyncio.Event(), 0.0, 0
        reader = asyncio.create_task(read_receipts(connection, topics.receipts, flow, stop))
        try:
            async def joined() -> bool:
                return all([await group_members(connection, f"{topics.prefix}-persister") == 1,
                            await group_members(connection, f"{topics.prefix}-sched") == 1])

            await wait_for(joined, timeout_s=60, interval=0.2, what=f"the persister and the scheduler in their groups "
                           f"(log: {log}):\n{persister.logs()}")
            items = partitioned(token, topics, asset, EVENTS)

            async def on_sent(count: int) -> None:
                nonlocal killed_at, runs_at_kill
                if killed_at or count < EVENTS // 3 or flow.answered < EVENTS // 4:
                    return
                runs_at_kill = len(await runs_of(engine))
                if runs_at_kill == 0:
                    return  # the scheduler has not made a run yet: the kill waits for a later tick
                pg_pair.replicas.crash_primary()
                killed_at = time.time()
                await asyncio.to_thread(pg_pair.replicas.promote)

            await stream(connection, topics.emissions, items, flow, rate_per_s=RATE_PER_S, on_sent=on_sent)
            assert killed_at, "the kill must land while the emissions stream"
            await wait_for(lambda: _true(flow.answered >= EVENTS), timeout_s=120, interval=0.2,
                           what=f"a receipt for every emission ({flow.answered} of {EVENTS}):\n{persister.logs()}")

            async def all_published() -> bool:
                found = await runs_of(engine)
                return len(found) >= EVENTS and all(r.published for r in found)

            await wait_for(all_published, timeout_s=120, interval=0.5, what=f"{EVENTS} published runs (log: {log})")
        finally:
            stop.set()
            await reader
            if scheduler.returncode is None:
                scheduler.send_signal(signal.SIGTERM)
                await scheduler.wait()
            await persister.stop()

        assert not pg_pair.replicas.primary.running(), "the old primary stays dead"
        found = await runs_of(engine)
        stored = await stored_count(engine)
    finally:
        await engine.dispose()

    signals = [ReadinessSignal.model_validate_json(r.value) for r in await read_topic(
        connection.bootstrap, topics.readiness(DAG),
        lambda got: len({json.loads(r.value)["run_id"] for r in got}) >= EVENTS, timeout_s=60)]
    run_ids_by_partition: dict[str, set[str]] = {}
    for sent in signals:
        run_ids_by_partition.setdefault(sent.partition_key or "", set()).add(str(sent.run_id))
    figures = {"events": EVENTS, "rate_per_s": RATE_PER_S, "runs_at_kill": runs_at_kill, "runs": len(found),
               "stored": stored, "signals": len(signals), "signalled_partitions": len(run_ids_by_partition),
               "receipt_stall_s": failover_figures(flow, killed_at)["receipt_stall_s"],
               "test_s": round(time.monotonic() - started, 1)}
    with capsys.disabled():
        print(f"\n[pg failover figures, scheduler] {json.dumps(figures, sort_keys=True)}")

    assert 0 < runs_at_kill < EVENTS, "the kill lands while the scheduler works"
    assert stored == EVENTS
    assert len(found) == EVENTS
    assert sorted(r.partition_key or "" for r in found) == [f"batch-{n:04d}" for n in range(EVENTS)]
    assert {r.generation for r in found} == {1}
    assert {s.run_id for s in signals} == {r.run_id for r in found}, "no signal for a run the new primary lacks"
    assert all(len(ids) == 1 for ids in run_ids_by_partition.values()), "repeats carry the same run id"


async def _true(value: bool) -> bool:
    return value
