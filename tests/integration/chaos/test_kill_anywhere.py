"""Every consumer kind keeps its promise when its process is killed -9 at random points while work flows.

| kind | work | effect counted | promise |
| --- | --- | --- | --- |
| persister | emission commands, each its own dedupe key | stored events (by command id) | exactly once |
| scheduler | stored asset events, each its own partition | consumer runs (by partition) | exactly once |

The Airflow bridge and forwarder, the SDK subscriber (plain and FastStream) and the readiness watcher keep
their own kill -9 tests beside Airflow (tests/integration/airflow, tests/integration/producers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity
from assetbus.consumers.storage import register_asset
from assetbus.producers import task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.chaos.harness import Effects, Kind, run_chaos
from tests.integration.consumers.persister.streams import commands, encoded, produce

ORDERS = AssetRef(name="chaos.orders", uri="s3://chaos/orders/")
N = 3_000


async def _scalar(engine: AsyncEngine, sql: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(sql))).scalar_one())


async def _stored(engine: AsyncEngine) -> Effects:
    return Effects(await _scalar(engine, "SELECT count(*) FROM asset_events"),
                   await _scalar(engine, "SELECT count(DISTINCT command_id) FROM asset_events"))


async def _runs(engine: AsyncEngine) -> Effects:
    return Effects(await _scalar(engine, "SELECT count(*) FROM consumer_runs WHERE dag_id = 'chaos_per_key'"),
                   await _scalar(engine, "SELECT count(DISTINCT partition_key) FROM consumer_runs "
                                         "WHERE dag_id = 'chaos_per_key'"))


def _env(infra: Settings, db_url: str, topics: Topics, token_secret: str) -> dict[str, str]:
    return {"KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
            "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}


@dataclass
class Setting:
    """What a kind's work is built from: the test's broker, database, topics and helpers."""

    infra: Settings
    db_url: str
    topics: Topics
    token_secret: str
    engine: AsyncEngine
    persister_config: PersisterConfig
    define_dags: Callable[..., Awaitable[object]]


async def _persister_kind(t: Setting) -> Kind:
    infra, db_url, topics, token_secret, engine = t.infra, t.db_url, t.topics, t.token_secret, t.engine
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    token = task_token(token_secret, "chaos", "run-1", "load")

    async def offer() -> None:
        await produce(infra.bootstrap_servers, topics.emissions, encoded(commands(token, topics, ORDERS, N)))

    return Kind("persister", "exactly once", N,
                ["run", "persister", "--group-id", f"{topics.prefix}-persister", "--session-timeout-ms", "6000",
                 "--max-records", "200", "--chunk-size", "100"],
                _env(infra, db_url, topics, token_secret), offer, lambda: _stored(engine))


async def _scheduler_kind(t: Setting) -> Kind:
    infra, db_url, topics, token_secret, engine = t.infra, t.db_url, t.topics, t.token_secret, t.engine
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    await t.define_dags(ConsumerDag(dag_id="chaos_per_key", schedule=AssetWait(ORDERS.name, mapping=Identity())))
    token = task_token(token_secret, "chaos", "run-1", "load")

    each_its_partition = [c.model_copy(update={"partition_key": f"p-{i}"})
                          for i, c in enumerate(commands(token, topics, ORDERS, N))]

    async def offer() -> None:  # the events, stored by a persister of this test (not under chaos)
        async with Persister(t.persister_config):
            await produce(infra.bootstrap_servers, topics.emissions, encoded(each_its_partition))

            async def stored() -> bool:
                return (await _stored(engine)).distinct >= N

            await wait_for(stored, timeout_s=120, what="the persister to store the scheduler's work")

    return Kind("scheduler", "exactly once", N,
                ["run", "scheduler", "--group-id", f"{topics.prefix}-sched", "--session-timeout-ms", "6000",
                 "--max-records", "100", "--republish-interval-s", "1"],
                _env(infra, db_url, topics, token_secret), offer, lambda: _runs(engine))


KINDS = {"persister": _persister_kind, "scheduler": _scheduler_kind}


@pytest.mark.parametrize("kind_name", list(KINDS))
async def test_a_consumer_killed_9_at_random_points_keeps_its_promise(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, engine: AsyncEngine, tmp_path: Path,
        persister_config: PersisterConfig, define_dags: Callable[..., Awaitable[object]], kind_name: str) -> None:
    kind = await KINDS[kind_name](Setting(infra, db_url, topics, token_secret, engine, persister_config, define_dags))
    report = await run_chaos(kind, tmp_path)
    print(report.line())
    assert report.effects is not None
    assert all(at < kind.wanted for at in report.kills_at[:1]), f"the first kill must land mid-work: {report.line()}"
    if kind.promise == "exactly once":
        assert (report.effects.seen, report.effects.distinct) == (kind.wanted, kind.wanted), report.line()
    else:
        assert report.effects.distinct == kind.wanted <= report.effects.seen, report.line()
