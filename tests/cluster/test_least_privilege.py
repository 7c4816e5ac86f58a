"""Least privilege on a broker with KRaft's StandardAuthorizer: one SCRAM user per service, exactly the ACLs
`assetbus topics plan` lists. The operator's CLI creates the topics, emissions through the SDK and through the
API's HTTP gateway are stored and answered, the API's metrics read every group's lag, the scheduler creates
the DAG's readiness topic and signals it, and the bridge's group reads the signals. With one ACL removed,
the service that needs it stops with one line naming it."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.scheduler import (
    AssetWait,
    ConsumerDag,
    LoadedDag,
    LoadResult,
    Scheduler,
    SchedulerConfig,
    sync_dags,
)
from assetbus.consumers.storage import create_engine, register_asset
from assetbus.plan import PRINCIPALS, Acl, build_plan
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.access import EXIT_ACCESS_DENIED
from assetbus.schemas import AssetRef, ReadinessSignal, ReceiptStatus, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.cluster.acl_broker import AclBroker
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
DAG = ConsumerDag(dag_id="orders_daily", schedule=AssetWait("orders"))


@pytest.fixture(scope="module")
def topics() -> Topics:  # the broker's SCRAM users are named after it, so it is fixed before the broker starts
    return Topics(prefix=f"l{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
def broker(infra: Settings, topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclBroker]:
    users = [f"{topics.prefix}-{role}" for role in PRINCIPALS]
    running = AclBroker.for_users(tmp_path_factory.mktemp("acl-broker"), users)
    running.start(infra.infra)
    try:
        yield running
    finally:
        running.stop()


async def test_the_pipeline_runs_with_exactly_the_planned_acls_and_a_removed_one_is_named(
        broker: AclBroker, topics: Topics, db_url: str, token_secret: str) -> None:
    plan = build_plan(topics, [DAG.dag_id], replication_factor=1)
    await broker.grant(plan.acls)

    def user(role: str) -> str:
        return plan.principals[role].removeprefix("User:")

    # the operator: `assetbus migrate` creates the core topics; the DAG is synced (its topic is the scheduler's)
    cli = broker.connection(user("cli")).for_service("cli")
    await wait_for(lambda: _ensured(cli, topics), timeout_s=30, what="the ACLs to take effect for the CLI")
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, ORDERS.name, ORDERS.uri)
            loaded = LoadResult(root="/dags/orders.py", dags=[LoadedDag(DAG, "/dags/orders.py")],
                                files=["/dags/orders.py"])
            await sync_dags(conn, loaded)
        await _pipeline(broker, plan.principals, topics, db_url, token_secret, engine)
    finally:
        await engine.dispose()

    # one ACL removed: the persister may no longer read in its group
    missing = Acl(plan.principals["persister"], "group", "literal", f"{topics.prefix}-persister", "Read")
    assert missing in plan.acls
    await broker.revoke([missing])
    code, output = await _run_persister(broker, user("persister"), topics, db_url, token_secret)
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert code == EXIT_ACCESS_DENIED, output
    assert errors == [f"error: Kafka at {broker.connection(user('persister')).describe()} denies "
                      f"{missing.principal} Read on group '{missing.resource_name}': add that ACL "
                      "(`assetbus topics plan` lists the ACLs of each service)"], output
    assert "Traceback" not in output


async def _ensured(cli: KafkaConnection, topics: Topics) -> bool:
    try:
        await ensure_topics(cli, topics)
    except KafkaError:
        return False
    return True


async def _pipeline(broker: AclBroker, principals: dict[str, str], topics: Topics, db_url: str, token_secret: str,
                    engine: AsyncEngine) -> None:
    def connection(role: str) -> KafkaConnection:
        return broker.connection(principals[role].removeprefix("User:")).for_service(role)

    persister = PersisterConfig(kafka=connection("persister"), database_url=db_url, token_secret=token_secret,
                                topics=topics)
    scheduler = SchedulerConfig(kafka=connection("scheduler"), database_url=db_url, topics=topics,
                                republish_interval_s=1.0)
    api = ApiConfig(kafka=connection("api"), database_url=db_url, token_secret=token_secret, topics=topics,
                    receipt_timeout_s=30, pipeline_gauges_interval_s=0.5)
    app = create_api(api)
    async with Persister(persister), Scheduler(scheduler), app.router.lifespan_context(app):
        token = task_token(token_secret, "ingest", "run-1", "load")
        async with AsyncEmitter(connection("sdk"), token, topics=topics, receipt_timeout_s=30) as emitter:
            receipt = await emitter.emit(ORDERS, partition_key="2026-12-01", dedupe_key="batch-1")
        assert receipt.status == ReceiptStatus.ACCEPTED
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api.test") as http:
            response = await http.post("/execution/asset-events/emit", headers={"Authorization": f"Bearer {token}"},
                                       json={"asset": ORDERS.model_dump(mode="json"), "partition_key": "2026-12-02",
                                             "dedupe_key": "batch-2"})
            assert response.status_code == 200 and response.json()["status"] == "accepted", response.text

            async def lag_of_every_group() -> bool:
                metrics = (await http.get("/metrics")).text
                return all(f'assetbus_consumer_group_lag{{group="{topics.prefix}-{service}"' in metrics
                           for service in ("persister", "scheduler"))

            await wait_for(lag_of_every_group, timeout_s=30, what="the API's lag gauges of both groups")

        bridge = AIOKafkaConsumer(topics.readiness(DAG.dag_id), **connection("bridge").client_kwargs("consumer"),
                                  group_id=f"{topics.prefix}-airflow-bridge",  # the bridge's default group
                                  enable_auto_commit=False, auto_offset_reset="earliest")
        await bridge.start()
        try:
            signals: list[ReadinessSignal] = []

            async def signalled() -> bool:
                batches = await bridge.getmany(timeout_ms=500)
                signals.extend(ReadinessSignal.model_validate_json(r.value) for rs in batches.values() for r in rs)
                return len(signals) >= 2

            await wait_for(signalled, timeout_s=60, what="the readiness signals, read by the bridge")
            await bridge.commit()
        finally:
            await bridge.stop()
        assert sorted((s.dag_id, s.partition_key) for s in signals) == [(DAG.dag_id, "2026-12-01"),
                                                                        (DAG.dag_id, "2026-12-02")]


async def _run_persister(broker: AclBroker, user: str, topics: Topics, db_url: str,
                         token_secret: str) -> tuple[int, str]:
    env = {**os.environ, **broker.environment(user), "DATABASE_URL": db_url, "ASSETBUS_TOPIC_PREFIX": topics.prefix,
           "ASSETBUS_TOKEN_SECRET": token_secret, "COLUMNS": "300"}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "persister", "--startup-timeout-s", "30", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")
