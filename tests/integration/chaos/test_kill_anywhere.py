"""Every consumer kind keeps its promise when its process is killed -9 at random points while work flows.

| kind (process killed) | work | effect counted, by identity | promise |
| --- | --- | --- | --- |
| persister | emission commands | stored events, by command id | exactly once |
| scheduler | stored events, each its own partition | consumer runs, by partition | exactly once |
| SDK subscriber, plain and FastStream | signals | handler completions, by run | at least once, deduped by run id |
| Airflow bridge | readiness signals | Airflow DAG runs, by partition | exactly once |
| Airflow forwarder | stored events | Airflow asset events, by event id | exactly once |
| watcher trigger (triggerer) | readiness signals | Airflow asset events, by run id | at least once, deduped by run id |

The subscriber's handler may run again after a kill (it was killed mid-handler, or after the handler and before
the ledger recorded the outcome); the run id lets it dedupe: every run completes (counted by its partition,
which has one run here), and the ledger records each one `success`. The Airflow kinds are in
test_kill_anywhere_airflow.py, which the Airflow worker runs beside the other Airflow tests.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig
from assetbus.consumers.api.routes.runs import subscriber_token
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity, Scheduler, SchedulerConfig
from assetbus.consumers.storage import register_asset
from assetbus.producers import task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.chaos.harness import (
    EXACTLY_ONCE,
    Effects,
    Kind,
    assert_promise,
    assetbus,
    at_least_once,
    command,
    run_chaos,
)
from tests.integration.conftest import served_api
from tests.integration.consumers.persister.streams import commands, encoded, produce
from tests.integration.consumers.readiness.test_readiness_subscriber import DAG as PER_BATCH
from tests.integration.consumers.readiness.test_readiness_subscriber import ORDERS as SUBSCRIBED
from tests.integration.producers.test_sdk_subscriber_alone import FASTSTREAM, PLAIN

ORDERS = AssetRef(name="chaos.orders", uri="s3://chaos/orders/")
N = 3_000
TAIL = N // 10
"""Of the persister's and the scheduler's work, offered after the last kill (`Kind.tail`)."""
SIGNALS = 60
"""Readiness signals a subscriber handles (a new member waits out the killed one's 10 s session and 3 s lease)."""


async def _counts(engine: AsyncEngine, sql: str, **params: str | None) -> Effects:
    async with engine.connect() as conn:
        seen, distinct = (await conn.execute(text(sql), params)).one()
    return Effects(int(seen), int(distinct))


async def _stored(engine: AsyncEngine) -> Effects:
    return await _counts(engine, "SELECT count(*), count(DISTINCT command_id) FROM asset_events")


async def _runs(engine: AsyncEngine, dag_id: str = "chaos_per_key", status: str | None = None) -> Effects:
    return await _counts(engine, "SELECT count(*), count(DISTINCT partition_key) FROM consumer_runs "
                                 "WHERE dag_id = :dag AND (CAST(:status AS text) IS NULL OR status = :status)",
                         dag=dag_id, status=status)


def _env(infra: Settings, db_url: str, topics: Topics, token_secret: str) -> dict[str, str]:
    return {"KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
            "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}


@dataclass
class Setting:
    """What a kind's work is built from: the test's broker, database, topics and helpers, and a stack for the
    services a kind runs in this process (not under chaos)."""

    infra: Settings
    db_url: str
    topics: Topics
    token_secret: str
    engine: AsyncEngine
    persister_config: PersisterConfig
    scheduler_config: SchedulerConfig
    api_config: ApiConfig
    define_dags: Callable[..., Awaitable[object]]
    services: AsyncExitStack
    log_dir: Path


async def _persister_kind(t: Setting) -> Kind:
    infra, db_url, topics, token_secret, engine = t.infra, t.db_url, t.topics, t.token_secret, t.engine
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    token = task_token(token_secret, "chaos", "run-1", "load")

    work = encoded(commands(token, topics, ORDERS, N))

    async def offer() -> None:
        await produce(infra.bootstrap_servers, topics.emissions, work[:N - TAIL])

    async def offer_tail() -> None:
        await produce(infra.bootstrap_servers, topics.emissions, work[N - TAIL:])

    return Kind("persister", EXACTLY_ONCE, N,
                command("persister", assetbus(
                    "run", "persister", "--group-id", f"{topics.prefix}-persister", "--session-timeout-ms", "6000",
                    "--max-records", "200", "--chunk-size", "100"), _env(infra, db_url, topics, token_secret)),
                offer, lambda: _stored(engine), tail=TAIL, offer_tail=offer_tail)


async def _stored_by_a_persister(t: Setting, asset: AssetRef, partitions: int, first: int = 0) -> None:
    """One event per partition `p-<i>` of `asset` (`first` ≤ i < `partitions`), stored by a persister of this test
    (not under chaos)."""
    token = task_token(t.token_secret, "chaos", "run-1", "load")
    each_its_partition = [c.model_copy(update={"partition_key": f"p-{i}"})
                          for i, c in enumerate(commands(token, t.topics, asset, partitions))][first:]
    async with Persister(t.persister_config):
        await produce(t.infra.bootstrap_servers, t.topics.emissions, encoded(each_its_partition))

        async def stored() -> bool:
            return (await _stored(t.engine)).distinct >= partitions

        await wait_for(stored, timeout_s=120, what="the persister to store the work")


async def _scheduler_kind(t: Setting) -> Kind:
    infra, db_url, topics, token_secret, engine = t.infra, t.db_url, t.topics, t.token_secret, t.engine
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    await t.define_dags(ConsumerDag(dag_id="chaos_per_key", schedule=AssetWait(ORDERS.name, mapping=Identity())))

    async def offer() -> None:
        await _stored_by_a_persister(t, ORDERS, N - TAIL)

    async def offer_tail() -> None:
        await _stored_by_a_persister(t, ORDERS, N, first=N - TAIL)

    return Kind("scheduler", EXACTLY_ONCE, N,
                command("scheduler", assetbus(
                    "run", "scheduler", "--group-id", f"{topics.prefix}-sched", "--session-timeout-ms", "6000",
                    "--max-records", "100", "--republish-interval-s", "1"), _env(infra, db_url, topics, token_secret)),
                offer, lambda: _runs(engine), tail=TAIL, offer_tail=offer_tail)


async def _subscriber_kind(t: Setting, flavour: str) -> Kind:
    """The SDK's readiness subscriber in a downstream script (the one of test_sdk_subscriber_alone.py), plain or
    on FastStream; the persister, scheduler and API it needs run in this process."""
    async with t.engine.begin() as conn:
        await register_asset(conn, SUBSCRIBED.name, SUBSCRIBED.uri)
    await t.define_dags(PER_BATCH)
    api_url = await t.services.enter_async_context(served_api(t.api_config))
    out = t.log_dir / "handled.txt"
    consumer = "chaos-service"
    env = {"OUT": str(out), "BLOCK": str(t.log_dir / "never"), "API_URL": api_url, "HANDLE_S": "0.05",
           "SUBSCRIBER_TOKEN": subscriber_token(t.token_secret, PER_BATCH.dag_id, consumer), "PREFIX": t.topics.prefix,
           "BOOTSTRAP": t.infra.bootstrap_servers, "GROUP": f"{t.topics.prefix}-{flavour}"}

    async def offer() -> None:
        await t.services.enter_async_context(Scheduler(t.scheduler_config))
        await _stored_by_a_persister(t, SUBSCRIBED, SIGNALS)

        async def signalled() -> bool:
            return (await _runs(t.engine, PER_BATCH.dag_id)).distinct >= SIGNALS

        await wait_for(signalled, timeout_s=60, what="the scheduler to signal every run")

    async def completions() -> Effects:
        done = [line for line in (out.read_text().splitlines() if out.exists() else []) if line.startswith("done ")]
        return Effects(len(done), len(set(done)))

    async def recorded() -> None:
        assert await _runs(t.engine, PER_BATCH.dag_id, "success") == Effects(SIGNALS, SIGNALS), \
            "a run's outcome is not recorded as success"

    script = PLAIN if flavour == "plain" else FASTSTREAM
    return Kind(f"subscriber-{flavour}", at_least_once("the signal's run id"), SIGNALS,
                command(flavour, [sys.executable, "-c", script], env), offer, completions, settled=recorded)


KINDS: dict[str, Callable[[Setting], Awaitable[Kind]]] = {
    "persister": _persister_kind,
    "scheduler": _scheduler_kind,
    "subscriber-plain": lambda t: _subscriber_kind(t, "plain"),
    "subscriber-faststream": lambda t: _subscriber_kind(t, "faststream"),
}


@pytest.mark.parametrize("kind_name", list(KINDS))
async def test_a_consumer_killed_9_at_random_points_keeps_its_promise(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, engine: AsyncEngine, tmp_path: Path,
        persister_config: PersisterConfig, scheduler_config: SchedulerConfig, api_config: ApiConfig,
        define_dags: Callable[..., Awaitable[object]], kind_name: str) -> None:
    async with AsyncExitStack() as services:
        kind = await KINDS[kind_name](Setting(infra, db_url, topics, token_secret, engine, persister_config,
                                              scheduler_config, api_config, define_dags, services, tmp_path))
        await assert_promise(kind, await run_chaos(kind, tmp_path))
