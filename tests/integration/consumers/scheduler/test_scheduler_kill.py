"""The scheduler killed -9 mid-stream and restarted: no missing run, no duplicate run, every run signalled, and
signals sent twice only for runs whose signal was not on the broker at the kill."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity
from assetbus.consumers.storage.runs import RunRow
from assetbus.producers import AsyncEmitter
from assetbus.schemas import ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.scheduler.processes import start_scheduler

from .conftest import ORDERS

EVENTS = 400


async def test_a_killed_scheduler_restarts_without_missing_or_duplicate_runs(
        infra: Settings, db_url: str, topics: Topics, tmp_path: Path, define_dags: Callable[..., Awaitable[object]],
        emitter: AsyncEmitter, runs_of: Callable[[str], Awaitable[list[RunRow]]], engine: AsyncEngine,
        read_signals: Callable[[str, int], Awaitable[list[ReadinessSignal]]],
        record_property: Callable[[str, object], None]) -> None:
    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders", mapping=Identity())))
    log = tmp_path / "scheduler.log"
    first = await start_scheduler(infra.bootstrap_servers, db_url, topics, log)
    await emitter.emit(ORDERS, partition_key="batch-0000", dedupe_key="batch-0")

    async def ready() -> bool:
        return len(await runs_of("per_batch")) == 1

    await wait_for(ready, timeout_s=40, what=f"the scheduler to start (log: {log})")

    async def produce() -> None:
        for n in range(1, EVENTS):
            await emitter.submit(emitter.command(ORDERS, partition_key=f"batch-{n:04d}", dedupe_key=f"batch-{n}"))
            if n % 20 == 19:
                await asyncio.sleep(0.1)  # a steady stream of about 200 events/s

    producing = asyncio.create_task(produce())
    try:
        async def some_runs() -> bool:
            return len(await runs_of("per_batch")) >= 60

        await wait_for(some_runs, timeout_s=30, what=f"the first runs (log: {log})")
        first.send_signal(signal.SIGKILL)
        await first.wait()
        killed_at = len(await runs_of("per_batch"))
        async with engine.connect() as conn:
            unpublished = set((await conn.execute(text(
                "SELECT r.run_id FROM consumer_runs r JOIN unpublished_batches u ON r.id = ANY(u.run_ids)"))).scalars())
        on_the_broker = await _run_ids_on(infra.bootstrap_servers, topics.readiness("per_batch"))
        unconfirmed = unpublished - set(on_the_broker)  # committed, and no signal on the broker
        second = await start_scheduler(infra.bootstrap_servers, db_url, topics, log)
        try:
            await producing

            async def all_runs() -> bool:
                return len(await runs_of("per_batch")) >= EVENTS and all(r.published for r in await runs_of(
                    "per_batch"))

            await wait_for(all_runs, timeout_s=45, what=f"{EVENTS} published runs (log: {log})")
        finally:
            second.send_signal(signal.SIGTERM)
            await second.wait()
    finally:
        producing.cancel()
        if first.returncode is None:
            first.kill()

    runs = await runs_of("per_batch")
    assert killed_at < EVENTS, "the kill should land mid-stream"
    assert len(runs) == EVENTS
    assert sorted(r.partition_key or "" for r in runs) == [f"batch-{n:04d}" for n in range(EVENTS)]
    assert {r.generation for r in runs} == {1}
    signals = await read_signals("per_batch", EVENTS)
    assert {s.run_id for s in signals} == {r.run_id for r in runs}  # repeats, if any, carry the same run id
    sent = await _run_ids_on(infra.bootstrap_servers, topics.readiness("per_batch"))
    repeats = len(sent) - len(set(sent))
    record_property("signals_sent_twice", repeats)
    record_property("unpublished_at_the_kill", len(unpublished))
    print(f"kill -9 at {killed_at} runs: {len(unpublished)} unpublished, {len(unconfirmed)} of them not on the "
          f"broker; {len(sent)} signals for {EVENTS} runs, {repeats} sent twice")
    assert repeats <= len(unconfirmed), "a signal on the broker at the kill was sent again"


BACKLOG = 5_000


async def test_two_kills_during_a_backlog_send_again_only_what_the_broker_did_not_have(
        infra: Settings, db_url: str, topics: Topics, tmp_path: Path, define_dags: Callable[..., Awaitable[object]],
        emitter: AsyncEmitter, runs_of: Callable[[str], Awaitable[list[RunRow]]], engine: AsyncEngine,
        record_property: Callable[[str, object], None]) -> None:
    """5,000 per-partition events already stored, the scheduler killed -9 twice while it works through them."""
    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders", mapping=Identity())))
    futures = [await emitter.submit(emitter.command(ORDERS, partition_key=f"p{n:05d}", dedupe_key=f"p{n}"))
               for n in range(BACKLOG)]
    assert all(r.accepted for r in await asyncio.gather(*futures))
    log = tmp_path / "scheduler.log"
    unconfirmed: set[str] = set()
    kills: list[tuple[int, int, int]] = []  # runs at the kill, unpublished, of which not on the broker
    for at in (BACKLOG // 5, BACKLOG // 2):
        process = await start_scheduler(infra.bootstrap_servers, db_url, topics, log)
        try:
            async def enough(at: int = at) -> bool:  # a count, not the rows: a slow poll would overshoot the kill
                async with engine.connect() as conn:
                    return int((await conn.execute(text(
                        "SELECT count(*) FROM consumer_runs WHERE dag_id = 'per_batch'"))).scalar_one()) >= at

            await wait_for(enough, timeout_s=60, interval=0.02, what=f"{at} runs (log: {log})")
        finally:
            process.send_signal(signal.SIGKILL)
            await process.wait()
        async with engine.connect() as conn:
            unpublished = set((await conn.execute(text(
                "SELECT r.run_id FROM consumer_runs r JOIN unpublished_batches u ON r.id = ANY(u.run_ids)"))).scalars())
        missing = unpublished - set(await _run_ids_on(infra.bootstrap_servers, topics.readiness("per_batch")))
        unconfirmed |= missing
        kills.append((len(await runs_of("per_batch")), len(unpublished), len(missing)))
    last = await start_scheduler(infra.bootstrap_servers, db_url, topics, log)
    try:
        async def all_published() -> bool:
            runs = await runs_of("per_batch")
            return len(runs) >= BACKLOG and all(r.published for r in runs)

        await wait_for(all_published, timeout_s=120, what=f"{BACKLOG} published runs (log: {log})")
    finally:
        last.send_signal(signal.SIGTERM)
        await last.wait()

    runs = await runs_of("per_batch")
    assert len(runs) == BACKLOG and {r.generation for r in runs} == {1}
    sent = await _run_ids_on(infra.bootstrap_servers, topics.readiness("per_batch"))
    assert set(sent) == {r.run_id for r in runs}
    repeats = len(sent) - len(set(sent))
    record_property("signals_sent_twice", repeats)
    print(f"kills at (runs, unpublished, not on the broker) {kills}: {len(sent)} signals for {BACKLOG} runs, "
          f"{repeats} sent twice")
    assert all(at < BACKLOG for at, _, _ in kills), "the kills should land mid-stream"
    assert repeats <= len(unconfirmed), "a signal on the broker at a kill was sent again"


async def _run_ids_on(bootstrap: str, topic: str) -> list[str]:
    """The run id of every signal on a readiness topic now (all partitions, up to their end offsets)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not parts:
            await consumer._client.force_metadata_update()
            parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        run_ids: list[str] = []

        async def read_to_the_end() -> bool:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                run_ids.extend(ReadinessSignal.model_validate_json(r.value).run_id for r in records)
            return all([await consumer.position(tp) >= ends[tp] for tp in parts])

        await wait_for(read_to_the_end, timeout_s=30, what=f"{topic} read to its end")
        return run_ids
    finally:
        await consumer.stop()
