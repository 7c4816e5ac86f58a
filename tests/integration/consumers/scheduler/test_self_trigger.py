"""No self-triggering at run time: an event a consumer DAG's own run emitted does not start that DAG."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Scheduler
from assetbus.consumers.storage.queue import list_skips
from assetbus.consumers.storage.runs import RunRow
from assetbus.producers import AsyncEmitter, dag_token
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

from .conftest import ORDERS


async def test_a_callback_of_the_consumer_dags_own_run_does_not_trigger_it(
        infra: Settings, topics: Topics, token_secret: str, define_dags: Callable[..., Awaitable[object]],
        scheduler: Scheduler, emitter: AsyncEmitter, engine: AsyncEngine,
        runs_of: Callable[[str], Awaitable[list[RunRow]]]) -> None:
    await define_dags(ConsumerDag(dag_id="investigate", schedule=AssetWait("orders")),
                      ConsumerDag(dag_id="pager", schedule=AssetWait("orders")))
    own_run = dag_token(token_secret, "investigate", "assetbus__investigate__1")
    async with AsyncEmitter(infra.bootstrap_servers, own_run, topics=topics, receipt_timeout_s=20) as callback:
        await callback.emit(ORDERS, partition_key="incident-7", dedupe_key="incident-7")

    async def skipped() -> list[object]:
        async with engine.connect() as conn:
            return await list_skips(conn, "investigate")  # type: ignore[return-value]

    (skip,) = await wait_for(skipped, what="the self-trigger skip")
    assert skip.reason == "self_trigger" and "assetbus__investigate__1" in skip.detail  # type: ignore[attr-defined]
    await wait_for(lambda: _runs(runs_of, "pager", 1), what="the other DAG's run")
    await emitter.emit(ORDERS, partition_key="incident-8", dedupe_key="incident-8")  # another DAG's task: runs
    await wait_for(lambda: _runs(runs_of, "investigate", 1), what="a run from an upstream event")
    assert [run.partition_key for run in await runs_of("investigate")] == ["incident-8"]


async def _runs(runs_of: Callable[[str], Awaitable[list[RunRow]]], dag_id: str, count: int) -> bool:
    return len(await runs_of(dag_id)) >= count
