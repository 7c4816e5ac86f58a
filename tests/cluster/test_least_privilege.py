"""Least privilege on a broker with KRaft's StandardAuthorizer: one SCRAM user per service, exactly the ACLs
`assetbus topics plan` lists. The operator's CLI creates the topics, emissions through the SDK and through the
API's HTTP gateway are stored and answered, the API's metrics read every group's lag, the scheduler sends the
run a crash left unpublished (reading its readiness topic's tail first) and signals the new ones, the
forwarder posts the events of its asset to Airflow as asset events (and passes over the others), and the bridge
creates one Airflow run per signal, in a real Airflow 3.3 (its api-server, scheduler and dag-processor, from
`.venv-airflow`). With one ACL removed, the service that needs it stops with one line naming it; a refusal that
stops part of a running service's work (the scheduler's re-publishing) makes its `/readyz` answer 503 naming
the ACL."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.account import AirflowAccount
from assetbus.consumers.airflow.bridge import AirflowBridge
from assetbus.consumers.airflow.config import BridgeConfig, ForwarderConfig
from assetbus.consumers.airflow.forwarder import AirflowForwarder
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
from assetbus.consumers.scheduler.config import READINESS_PARTITIONS
from assetbus.consumers.scheduler.payload import signal_json
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage import create_engine, register_asset
from assetbus.consumers.storage.fanout import write_fanout
from assetbus.consumers.storage.runs import NewRun, created_run, unpublished_runs
from assetbus.infra.airflow import POSTGRES, LocalAirflow
from assetbus.plan import PRINCIPALS, Acl, build_plan
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka import KafkaConnection, create_producer, partition_for
from assetbus.producers.kafka.access import EXIT_ACCESS_DENIED, KafkaAccessDenied
from assetbus.schemas import AssetRef, ReceiptStatus, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.cluster.acl_broker import AclBroker
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders")  # as Airflow writes it (no trailing slash)
SHIPMENTS = AssetRef(name="shipments", uri="s3://bucket/shipments")
"""An asset no consumer DAG of assetbus waits on: the forwarder's, posted to Airflow as an asset event."""
DAG = ConsumerDag(dag_id="orders_daily", schedule=AssetWait("orders"))
SENT, CRASHED = "2026-11-29", "2026-11-30"
"""The partitions of two runs a scheduler's crash left unpublished: SENT's signal had reached the broker (it is
found there and only marked), CRASHED's had not (it is sent)."""
AIRFLOW_DAG = f'''
from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, task

orders = Asset("{ORDERS.name}", uri="{ORDERS.uri}")
shipments = Asset("{SHIPMENTS.name}", uri="{SHIPMENTS.uri}")

with DAG(dag_id="{DAG.dag_id}", schedule=PartitionedAssetTimetable(assets=orders), catchup=False,
         is_paused_upon_creation=True):  # paused: the bridge creates its runs, which stay queued

    @task(inlets=[orders], outlets=[shipments])
    def load() -> None:
        print("loading")

    load()
'''
"""The consumer DAG in Airflow whose runs the bridge starts."""


@pytest.fixture(scope="module")
def topics() -> Topics:  # the broker's SCRAM users are named after it, so it is fixed before the broker starts
    return Topics(prefix=f"l{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
def airflow(infra: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAirflow]:
    """A real Airflow 3.3 (`.venv-airflow`) with the consumer DAG parsed: the bridge's Airflow."""
    home = tmp_path_factory.mktemp("airflow")
    (home / "dags").mkdir()
    (home / "dags" / "orders_daily.py").write_text(AIRFLOW_DAG)
    local = LocalAirflow(home, home / "dags", metadata=POSTGRES, postgres_server=infra.database_url)
    try:
        local.launch()
        local.wait_healthy(240)
        http = httpx.Client(base_url=f"{local.url}/api/v2", timeout=30,
                            headers={"Authorization": f"Bearer {local.token()}"})
        deadline = time.monotonic() + 180
        while http.get(f"/dags/{DAG.dag_id}").status_code != 200:  # parsed by the dag-processor
            assert time.monotonic() < deadline, f"Airflow did not parse {DAG.dag_id}; see {home}/dag-processor.log"
            time.sleep(0.5)
        yield local
    finally:
        local.stop()


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
        broker: AclBroker, topics: Topics, db_url: str, token_secret: str, airflow: LocalAirflow) -> None:
    plan = build_plan(topics, [DAG.dag_id], replication_factor=1)
    await broker.grant(plan.acls)

    def user(role: str) -> str:
        return plan.principals[role].removeprefix("User:")

    # the operator: `assetbus migrate` creates the core topics; the DAG is synced (its topic is the scheduler's)
    cli = broker.connection(user("cli")).for_service("cli")
    await wait_for(lambda: _ensured(cli, topics), timeout_s=30, what="the ACLs to take effect for the CLI")
    engine = create_engine(db_url)
    try:
        await _left_by_a_crash(engine, broker, topics)
        await _pipeline(broker, plan.principals, topics, db_url, token_secret, engine, airflow)
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


async def test_a_refusal_that_stops_the_schedulers_republishing_fails_its_readyz_naming_the_acl(
        broker: AclBroker, topics: Topics, db_url: str) -> None:
    plan = build_plan(topics, [DAG.dag_id], replication_factor=1)
    await broker.grant(plan.acls)
    missing = Acl(plan.principals["scheduler"], "topic", "prefixed", f"{topics.prefix}.readiness.", "Read")
    assert missing in plan.acls
    await broker.revoke([missing])
    user = plan.principals["scheduler"].removeprefix("User:")
    kafka = broker.connection(user).for_service("scheduler")
    cli = broker.connection(plan.principals["cli"].removeprefix("User:")).for_service("cli")
    await wait_for(lambda: _ensured(cli, topics), timeout_s=30, what="the ACLs to take effect for the CLI")
    engine = create_engine(db_url)
    try:
        await _left_by_a_crash(engine, broker, topics)
        config = SchedulerConfig(kafka=kafka, database_url=db_url, topics=topics, republish_interval_s=0.5,
                                 metrics_port=0, metrics_host="127.0.0.1")
        async with Scheduler(config) as scheduler, httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{scheduler.metrics_port}") as probes:
            named = (f"denies {missing.principal} Read on topic '{topics.readiness(DAG.dag_id)}': add that ACL")

            async def refused() -> dict[str, object] | None:
                answer = await probes.get("/readyz")
                body: dict[str, object] = answer.json()
                return body if answer.status_code == 503 else None

            report = await wait_for(refused, timeout_s=60, what="the scheduler's /readyz to fail")
            checks = report["checks"]
            assert isinstance(checks, dict)
            assert not checks["kafka_access"]["ok"] and named in checks["kafka_access"]["detail"], report
            assert [name for name, check in checks.items() if not check["ok"]] == ["kafka_access"], report
            metrics = (await probes.get("/metrics")).text
            assert (f'assetbus_kafka_access_denied{{operation="Read",principal="{missing.principal}",'
                    f'resource="topic \'{topics.readiness(DAG.dag_id)}\'",work="republishing unpublished runs"}} 1.0'
                    in metrics), metrics

            await broker.grant([missing])  # the one ACL the plan adds for this: the run is sent, /readyz is 200

            async def ready_and_sent() -> bool:
                async with engine.connect() as conn:
                    left = await unpublished_runs(conn)
                return (await probes.get("/readyz")).status_code == 200 and not left

            await wait_for(ready_and_sent, timeout_s=60, what="the run left unpublished to be sent once granted")
            assert "assetbus_kafka_access_denied{" not in (await probes.get("/metrics")).text
    finally:
        await engine.dispose()


async def test_an_http_emit_the_acls_refuse_is_answered_503_and_fails_the_apis_readyz_naming_the_acl(
        broker: AclBroker, topics: Topics, db_url: str, token_secret: str) -> None:
    plan = build_plan(topics, [DAG.dag_id], replication_factor=1)
    await broker.grant(plan.acls)
    missing = Acl(plan.principals["api"], "topic", "literal", topics.emissions, "Write")
    assert missing in plan.acls

    def connection(role: str) -> KafkaConnection:
        return broker.connection(plan.principals[role].removeprefix("User:")).for_service(role)

    await wait_for(lambda: _ensured(connection("cli"), topics), timeout_s=30, what="the ACLs to take effect")
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, ORDERS.name, ORDERS.uri)
    finally:
        await engine.dispose()
    config = ApiConfig(kafka=connection("api"), database_url=db_url, token_secret=token_secret, topics=topics,
                       receipt_timeout_s=30)
    persister = PersisterConfig(kafka=connection("persister"), database_url=db_url, token_secret=token_secret,
                                topics=topics)
    token = task_token(token_secret, "ingest", "run-1", "load")
    named = f"denies {missing.principal} Write on topic '{topics.emissions}'"
    app = create_api(config)
    async with Persister(persister), app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://api.test") as http:
        async def emit(key: str) -> httpx.Response:
            return await http.post("/execution/asset-events/emit", headers={"Authorization": f"Bearer {token}"},
                                   json={"asset": ORDERS.model_dump(mode="json"), "dedupe_key": key})

        assert (await emit("before")).json()["status"] == "accepted"
        await broker.revoke([missing])  # while the API runs

        async def refused() -> httpx.Response | None:
            answer = await emit("refused")
            return answer if answer.status_code == 503 else None

        answer = await wait_for(refused, timeout_s=30, interval=0.5, what="an HTTP emit the ACLs refuse")
        assert named in answer.text, answer.text
        unready = await http.get("/readyz")
        check = unready.json()["checks"]["kafka_access"]
        assert (unready.status_code, check["ok"]) == (503, False), unready.text
        assert check["detail"].startswith("HTTP emit: ") and named in check["detail"], unready.text

        await broker.grant([missing])

        async def accepted() -> bool:  # the gateway's new producer (the refused batch broke the old one's sequence)
            answer = await emit("granted")
            return answer.status_code == 200 and answer.json()["status"] == "accepted"

        await wait_for(accepted, timeout_s=60, interval=0.5, what="an HTTP emit once the ACL is granted")

        async def ready() -> bool:  # its report is cached for a second
            return (await http.get("/readyz")).status_code == 200

        await wait_for(ready, timeout_s=10, what="the API's /readyz once an emit went through")

    await broker.revoke([missing])  # an API started without it: its producer cannot start, and says why
    app = create_api(config)
    with pytest.raises(KafkaAccessDenied, match=re.escape(named)):
        async with app.router.lifespan_context(app):
            pass


async def test_a_persister_whose_asset_events_the_acls_refuse_answers_the_command_once_the_acl_is_restored(
        broker: AclBroker, topics: Topics, db_url: str, token_secret: str) -> None:
    async with _persister_under_acls(broker, topics, db_url, token_secret, topics.asset_events) as (
            missing, named, emitter, probes, engine):
        base = await _records_on(broker, topics.asset_events)  # an earlier test of the module wrote its own
        assert (await emitter.emit(ORDERS, dedupe_key="before")).status == ReceiptStatus.ACCEPTED
        await wait_for(lambda: _records_on(broker, topics.asset_events, at_least=base + 1), timeout_s=10,
                       what="the first asset event")
        await broker.revoke([missing])  # while the persister runs

        refused = await emitter.emit_nowait(ORDERS, dedupe_key="refused")

        await _unready_naming(probes, named)
        receipt = await asyncio.wait_for(refused, 60)  # stored: its receipt goes out, its asset event not
        assert receipt.status == ReceiptStatus.ACCEPTED, receipt
        assert await _records_on(broker, topics.asset_events) == base + 1

        await broker.grant([missing])
        started = time.monotonic()
        await wait_for(lambda: _records_on(broker, topics.asset_events, at_least=base + 2), timeout_s=60,
                       what="the refused asset event once the ACL is restored")
        later = await asyncio.wait_for(emitter.emit(ORDERS, dedupe_key="after"), 30)
        assert later.status == ReceiptStatus.ACCEPTED
        answered_in = time.monotonic() - started
        assert answered_in < 30, f"a later command was answered {answered_in:.1f} s after the ACL was restored"
        assert await _records_on(broker, topics.asset_events) >= base + 3

        async def ready() -> bool:
            return (await probes.get("/readyz")).status_code == 200

        await wait_for(ready, timeout_s=10, what="the persister's /readyz once a batch went through")
        await _each_stored_once(engine, ["after", "before", "refused"])


async def test_a_persister_whose_receipts_the_acls_refuse_answers_the_command_once_the_acl_is_restored(
        broker: AclBroker, topics: Topics, db_url: str, token_secret: str) -> None:
    """Without Write on the receipts topic the persister cannot see it (a topic the principal may not write to is
    left out of its metadata). Before: it took the topic for missing and dead-lettered the stored command, whose
    receipt was never sent. Now the batch waits, `/readyz` names the ACL, and the command is answered once."""
    async with _persister_under_acls(broker, topics, db_url, token_secret, topics.receipts) as (
            missing, named, emitter, probes, engine):
        dead_before = await _records_on(broker, topics.emissions_dlq)
        assert (await emitter.emit(ORDERS, dedupe_key="before")).status == ReceiptStatus.ACCEPTED
        await broker.revoke([missing])  # while the persister runs

        refused = await emitter.emit_nowait(ORDERS, dedupe_key="refused")

        await _unready_naming(probes, named)

        async def retried_or_dead_lettered() -> bool:  # the batch tried again under the refusal, or given up
            metrics = (await probes.get("/metrics")).text
            failures = [line for line in metrics.splitlines()
                        if line.startswith("assetbus_persister_batch_failures_total ")]
            return ((bool(failures) and float(failures[0].split()[1]) >= 3)
                    or await _records_on(broker, topics.emissions_dlq) > dead_before)

        await wait_for(retried_or_dead_lettered, timeout_s=60, what="three failed rounds of the refused batch")
        assert await _records_on(broker, topics.emissions_dlq) == dead_before, "a stored command dead-lettered"
        assert not refused.done(), "answered while the persister may not write its receipt"

        await broker.grant([missing])
        receipt = await asyncio.wait_for(refused, 60)
        assert receipt.status == ReceiptStatus.ACCEPTED, receipt
        later = await asyncio.wait_for(emitter.emit(ORDERS, dedupe_key="after"), 30)
        assert later.status == ReceiptStatus.ACCEPTED

        async def ready() -> bool:
            return (await probes.get("/readyz")).status_code == 200

        await wait_for(ready, timeout_s=10, what="the persister's /readyz once a batch went through")
        assert await _records_on(broker, topics.emissions_dlq) == dead_before, "a stored command dead-lettered"
        await _each_stored_once(engine, ["after", "before", "refused"])


async def test_a_scheduler_whose_signals_the_acls_refuse_sends_them_once_the_acl_is_restored(
        broker: AclBroker, topics: Topics, db_url: str, token_secret: str) -> None:
    plan = build_plan(topics, [DAG.dag_id], replication_factor=1)
    await broker.grant(plan.acls)
    missing = Acl(plan.principals["scheduler"], "topic", "prefixed", f"{topics.prefix}.readiness.", "Write")
    assert missing in plan.acls

    def connection(role: str) -> KafkaConnection:
        return broker.connection(plan.principals[role].removeprefix("User:")).for_service(role)

    await wait_for(lambda: _ensured(connection("cli"), topics), timeout_s=30, what="the ACLs to take effect")
    readiness = topics.readiness(DAG.dag_id)
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, ORDERS.name, ORDERS.uri)
            loaded = LoadResult(root="/dags/orders.py", dags=[LoadedDag(DAG, "/dags/orders.py")])
            await sync_dags(conn, loaded)
        await ReadinessTopics(broker.admin_connection(), topics).ensure([DAG.dag_id])
        base = await _signals_on(broker, readiness)  # a topic made by an earlier test of the module holds its own
        persister = PersisterConfig(kafka=connection("persister"), database_url=db_url, token_secret=token_secret,
                                    topics=topics)
        scheduler = SchedulerConfig(kafka=connection("scheduler"), database_url=db_url, topics=topics,
                                    republish_interval_s=0.5, metrics_port=0, metrics_host="127.0.0.1",
                                    backoff_max_s=1.0)
        token = task_token(token_secret, "ingest", "run-1", "load")
        named = f"denies {missing.principal} Write on topic '{readiness}'"
        first, refused, later = _on_one_partition(3)  # a refused batch breaks its partition's sequence only

        async def signalled(count: int) -> bool:
            async with engine.connect() as conn:
                left = await unpublished_runs(conn)
            return not left and await _signals_on(broker, readiness) == base + count

        async with Persister(persister), Scheduler(scheduler) as running, AsyncEmitter(
                connection("sdk"), token, topics=topics, receipt_timeout_s=30) as emitter, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{running.metrics_port}") as probes:
            await emitter.emit(ORDERS, partition_key=first, dedupe_key="before")
            await wait_for(lambda: signalled(1), timeout_s=30, what="the first signal")
            await broker.revoke([missing])  # while the scheduler runs

            await emitter.emit(ORDERS, partition_key=refused, dedupe_key="refused")

            async def unready() -> dict[str, object] | None:
                answer = await probes.get("/readyz")
                return answer.json() if answer.status_code == 503 else None

            report = await wait_for(unready, timeout_s=60, what="the scheduler's /readyz to fail")
            check = report["checks"]["kafka_access"]  # type: ignore[index]
            assert not check["ok"] and named in check["detail"], report
            assert await _signals_on(broker, readiness) == base + 1

            await broker.grant([missing])
            started = time.monotonic()
            await wait_for(lambda: signalled(2), timeout_s=60, what="the refused signal once the ACL is restored")
            sent_in = time.monotonic() - started
            assert sent_in < 30, f"the signal was sent {sent_in:.1f} s after the ACL was restored"
            await emitter.emit(ORDERS, partition_key=later, dedupe_key="after")
            await wait_for(lambda: signalled(3), timeout_s=30, what="a later signal")

            async def ready() -> bool:
                return (await probes.get("/readyz")).status_code == 200

            await wait_for(ready, timeout_s=10, what="the scheduler's /readyz once its signals went out")
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def _persister_under_acls(broker: AclBroker, topics: Topics, db_url: str, token_secret: str,
                                refused_topic: str) -> AsyncIterator[tuple[Acl, str, AsyncEmitter, httpx.AsyncClient,
                                                                           AsyncEngine]]:
    """A persister with exactly the planned ACLs, an emitter and the persister's probes; yields the persister's
    Write ACL on `refused_topic` (for the test to revoke), the refusal's text, and the database engine."""
    plan = build_plan(topics, [DAG.dag_id], replication_factor=1)
    await broker.grant(plan.acls)
    missing = Acl(plan.principals["persister"], "topic", "literal", refused_topic, "Write")
    assert missing in plan.acls

    def connection(role: str) -> KafkaConnection:
        return broker.connection(plan.principals[role].removeprefix("User:")).for_service(role)

    await wait_for(lambda: _ensured(connection("cli"), topics), timeout_s=30, what="the ACLs to take effect")
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, ORDERS.name, ORDERS.uri)
        config = PersisterConfig(kafka=connection("persister"), database_url=db_url, token_secret=token_secret,
                                 topics=topics, metrics_port=0, metrics_host="127.0.0.1", backoff_max_s=1.0)
        token = task_token(token_secret, "ingest", "run-1", "load")
        named = f"denies {missing.principal} Write on topic '{refused_topic}'"
        async with Persister(config) as persister, AsyncEmitter(
                connection("sdk"), token, topics=topics, receipt_timeout_s=90, attempts=1) as emitter, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{persister.metrics_port}") as probes:
            yield missing, named, emitter, probes, engine
    finally:
        await engine.dispose()


async def _unready_naming(probes: httpx.AsyncClient, named: str) -> None:
    """Until the service's `/readyz` answers 503; its `kafka_access` check must name the refusal."""

    async def unready() -> dict[str, object] | None:
        answer = await probes.get("/readyz")
        return answer.json() if answer.status_code == 503 else None

    report = await wait_for(unready, timeout_s=60, what="the persister's /readyz to fail")
    check = report["checks"]["kafka_access"]  # type: ignore[index]
    assert not check["ok"] and named in check["detail"], report


async def _each_stored_once(engine: AsyncEngine, dedupe_keys: list[str]) -> None:
    """The database holds exactly one event of each dedupe key, and no other."""
    async with engine.connect() as conn:
        stored = (await conn.execute(text(
            "SELECT dedupe_key, count(*) FROM asset_events GROUP BY dedupe_key ORDER BY dedupe_key"))).all()
    assert [tuple(row) for row in stored] == [(key, 1) for key in sorted(dedupe_keys)]


def _on_one_partition(count: int) -> list[str]:
    """`count` December days whose signals go to one readiness partition."""
    days = [f"2026-12-{day:02d}" for day in range(1, 32)]
    home = partition_for(days[0].encode(), range(READINESS_PARTITIONS))
    return [day for day in days if partition_for(day.encode(), range(READINESS_PARTITIONS)) == home][:count]


async def _left_by_a_crash(engine: AsyncEngine, broker: AclBroker, topics: Topics) -> None:
    """The assets registered, the DAG synced, and what a scheduler killed between its transaction and the
    broker's acks leaves behind: two runs committed and still unpublished, one of whose signals (SENT) reached
    the broker before the kill (written here by the platform's admin, as the scheduler had sent it)."""
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
        await register_asset(conn, SHIPMENTS.name, SHIPMENTS.uri)
        loaded = LoadResult(root="/dags/orders.py", dags=[LoadedDag(DAG, "/dags/orders.py")])
        await sync_dags(conn, loaded)
        new = [NewRun(str(uuid.uuid4()), DAG.dag_id, key, None, 1, [], "scheduler", "[]") for key in (SENT, CRASHED)]
        written = await write_fanout(conn, new, [], [])
    sent = created_run(new[0], written.run_ids[new[0].run_id], written.created_at)
    admin = broker.admin_connection()
    await ReadinessTopics(admin, topics).ensure([DAG.dag_id])
    producer = create_producer(admin)
    await producer.start()
    try:
        topic = topics.readiness(DAG.dag_id)
        partition = partition_for(SENT.encode(), sorted(await producer.partitions_for(topic)))
        await producer.send_and_wait(topic, signal_json(sent), key=SENT.encode(), partition=partition)
    finally:
        await producer.stop()
    async with engine.connect() as conn:
        assert sorted(run.partition_key or "" for run in await unpublished_runs(conn)) == [SENT, CRASHED]


async def _signals_on(broker: AclBroker, topic: str) -> int:
    """How many records the readiness topic holds (its end offsets), as the platform's admin reads them."""
    consumer = AIOKafkaConsumer(**broker.admin_connection().client_kwargs("consumer"), group_id=None)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(READINESS_PARTITIONS)]
        return int(sum((await consumer.end_offsets(parts)).values()))
    finally:
        await consumer.stop()


async def _records_on(broker: AclBroker, topic: str, *, at_least: int = 0) -> int:
    """How many records `topic` holds (its end offsets), as the platform's admin reads them; 0 below `at_least`."""
    admin = AIOKafkaAdminClient(**broker.admin_connection().client_kwargs())
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    parts = [TopicPartition(topic, partition["partition"]) for partition in described["partitions"]]
    consumer = AIOKafkaConsumer(**broker.admin_connection().client_kwargs("consumer"), group_id=None)
    await consumer.start()
    try:
        held = int(sum((await consumer.end_offsets(parts)).values()))
    finally:
        await consumer.stop()
    return held if held >= at_least else 0


async def _ensured(cli: KafkaConnection, topics: Topics) -> bool:
    try:
        await ensure_topics(cli, topics)
    except KafkaError:
        return False
    return True


async def _pipeline(broker: AclBroker, principals: dict[str, str], topics: Topics, db_url: str, token_secret: str,
                    engine: AsyncEngine, airflow: LocalAirflow) -> None:
    def connection(role: str) -> KafkaConnection:
        return broker.connection(principals[role].removeprefix("User:")).for_service(role)

    persister = PersisterConfig(kafka=connection("persister"), database_url=db_url, token_secret=token_secret,
                                topics=topics)
    scheduler = SchedulerConfig(kafka=connection("scheduler"), database_url=db_url, topics=topics,
                                republish_interval_s=1.0)
    api = ApiConfig(kafka=connection("api"), database_url=db_url, token_secret=token_secret, topics=topics,
                    receipt_timeout_s=30, pipeline_gauges_interval_s=0.5)
    account = AirflowAccount(url=airflow.url, username=airflow.username, password=airflow.password)
    forwarder = AirflowForwarder(ForwarderConfig(kafka=connection("forwarder"), database_url=db_url, topics=topics,
                                                 assets=(SHIPMENTS.name,), airflow=account))
    bridge = AirflowBridge(BridgeConfig(kafka=connection("bridge"), database_url=db_url, topics=topics,
                                        dag_ids=(DAG.dag_id,), poll_interval_s=1.0, airflow=account))
    app = create_api(api)
    async with Persister(persister), Scheduler(scheduler), forwarder, bridge, app.router.lifespan_context(app):
        token = task_token(token_secret, "ingest", "run-1", "load")
        async with AsyncEmitter(connection("sdk"), token, topics=topics, receipt_timeout_s=30) as emitter:
            receipt = await emitter.emit(ORDERS, partition_key="2026-12-01", dedupe_key="batch-1")
            shipped = await emitter.emit(SHIPMENTS, dedupe_key="shipment-1")
        assert (receipt.status, shipped.status) == (ReceiptStatus.ACCEPTED, ReceiptStatus.ACCEPTED)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api.test") as http:
            response = await http.post("/execution/asset-events/emit", headers={"Authorization": f"Bearer {token}"},
                                       json={"asset": ORDERS.model_dump(mode="json"), "partition_key": "2026-12-02",
                                             "dedupe_key": "batch-2"})
            assert response.status_code == 200 and response.json()["status"] == "accepted", response.text

            async def lag_of_every_group() -> bool:
                metrics = (await http.get("/metrics")).text
                return all(f'assetbus_consumer_group_lag{{group="{topics.prefix}-{service}",topic="{topic}"}} 0.0'
                           in metrics for service, topic in (("persister", topics.emissions),
                                                             ("scheduler", topics.asset_events),
                                                             ("airflow-forwarder", topics.asset_events)))

            await wait_for(lag_of_every_group, timeout_s=30, what="every group's commits, in the API's lag gauges")
            events = forwarder.metrics.events
            assert [events.labels(outcome=outcome)._value.get() for outcome in ("posted", "skipped")] == [1, 2]
            assert (await http.get("/readyz")).json()["checks"]["kafka_access"]["ok"]

            async with httpx.AsyncClient(base_url=f"{airflow.url}/api/v2", timeout=30,
                                         headers={"Authorization": f"Bearer {airflow.token()}"}) as rest:
                async def airflow_runs() -> list[str] | None:
                    runs = (await rest.get(f"/dags/{DAG.dag_id}/dagRuns", params={"limit": 100})).json()["dag_runs"]
                    keys = sorted(str(run["partition_key"]) for run in runs)
                    return keys if len(keys) >= 4 else None

                created = await wait_for(airflow_runs, timeout_s=120, interval=0.5,
                                         what="the bridge's Airflow runs, one per readiness signal")
            assert created == [SENT, CRASHED, "2026-12-01", "2026-12-02"]
            assert await _signals_on(broker, topics.readiness(DAG.dag_id)) == 4  # SENT's was not sent again
            bridge_lag = (f'assetbus_consumer_group_lag{{group="{topics.prefix}-airflow-bridge",'
                          f'topic="{topics.readiness(DAG.dag_id)}"}} 0.0')

            async def bridge_committed() -> bool:
                return bridge_lag in (await http.get("/metrics")).text

            await wait_for(bridge_committed, timeout_s=30, what="the bridge's commits, in the API's lag gauges")
        assert bridge.metrics.airflow_runs.labels(dag_id=DAG.dag_id, outcome="created")._value.get() == 4
        async with engine.connect() as conn:
            assert await unpublished_runs(conn) == []


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
