"""The scheduler killed -9 mid-stream and restarted: no missing run, no duplicate run, every run signalled."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity
from assetbus.consumers.storage.runs import RunRow
from assetbus.producers import AsyncEmitter
from assetbus.schemas import ReadinessSignal, Topics
from tests.helpers import wait_for
from tests.integration.consumers.scheduler.processes import start_scheduler

from .conftest import ORDERS

EVENTS = 400


async def test_a_killed_scheduler_restarts_without_missing_or_duplicate_runs(
        infra, db_url: str, topics: Topics, tmp_path: Path, define_dags: Callable[..., Awaitable[object]],  # type: ignore[no-untyped-def]
        emitter: AsyncEmitter, runs_of: Callable[[str], Awaitable[list[RunRow]]],
        read_signals: Callable[[str, int], Awaitable[list[ReadinessSignal]]]) -> None:
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
    assert sorted(r.partition_key for r in runs) == [f"batch-{n:04d}" for n in range(EVENTS)]
    assert {r.generation for r in runs} == {1}
    signals = await read_signals("per_batch", EVENTS)
    assert {s.run_id for s in signals} == {r.run_id for r in runs}  # repeats, if any, carry the same run id
