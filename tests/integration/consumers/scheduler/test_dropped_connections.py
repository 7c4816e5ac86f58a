"""The scheduler checks no connection before use (no pre-ping): a connection the database dropped fails the
batch's first statement, and the batch is retried on a new connection."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Scheduler
from assetbus.producers import AsyncEmitter

from .conftest import ORDERS
from .test_fanout import Define, RunsOf, wait_runs


async def test_runs_are_still_created_after_the_database_dropped_the_schedulers_connections(
        define_dags: Define, scheduler: Scheduler, emitter: AsyncEmitter, runs_of: RunsOf,
        engine: AsyncEngine) -> None:
    await define_dags(ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders")))
    await emitter.emit(ORDERS, partition_key="before", dedupe_key="before")
    await wait_runs(runs_of, "per_batch", 1)
    async with engine.connect() as conn:  # every other client of this database: the scheduler's pool among them
        dropped = (await conn.execute(text(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ))).scalar_one()
    assert dropped >= 1
    await emitter.emit(ORDERS, partition_key="after", dedupe_key="after")
    runs = await wait_runs(runs_of, "per_batch", 2)
    assert [r.partition_key for r in runs] == ["before", "after"]
    assert scheduler.shell.failures == 0  # retried inside the batch, not rewound
