"""OAUTHBEARER sign-in against Kafka's own `OAuthBearerValidatorCallbackHandler`, which checks each client's JWT
(signature against the local token server's JWKS, expiry, audience, issuer). Every client of the pipeline signs in
with its own OIDC client credentials: the operator's topic creation, the SDK's emitter, the persister, the scheduler
and a readiness consumer; an emission is stored, answered and signalled. Each service fetches one token for all its
connections. A wrong client secret stops the SDK and `assetbus run persister` at start-up with one line naming the
settings; a token is replaced before it expires; a token for another audience is refused by the broker."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

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
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka import KafkaConnection, OAuthCredentialsRefused
from assetbus.schemas import AssetRef, ReadinessSignal, ReceiptStatus, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.cluster.oauth_broker import SASL_PORT, OAuthBroker, TokenServer
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
DAG = ConsumerDag(dag_id="orders_daily", schedule=AssetWait("orders"))
CLIENTS = ("cli", "sdk", "persister", "scheduler", "bridge", "elsewhere", "short-lived")
SHORT_LIFETIME_S = 10
REFUSED = ("error: the OAuth token endpoint refused the client credentials (invalid_client): "
           "check KAFKA_SASL_OAUTH_CLIENT_ID / KAFKA_SASL_OAUTH_CLIENT_SECRET")


@pytest.fixture(scope="module")
def tokens() -> Iterator[TokenServer]:
    server = TokenServer({client: secrets.token_urlsafe(16) for client in CLIENTS},
                         audience={"elsewhere": "another-cluster"}, lifetimes={"short-lived": SHORT_LIFETIME_S})
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def broker(infra: Settings, tokens: TokenServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthBroker]:
    running = OAuthBroker(tmp_path_factory.mktemp("oauth-broker"), tokens=tokens)
    running.start(infra.infra)
    try:
        yield running
    finally:
        running.stop()
        running.stop()  # idempotent
        assert running.process is None


@pytest.fixture
def topics() -> Topics:
    return Topics(prefix=f"o{uuid.uuid4().hex[:10]}")


async def test_the_pipeline_signs_in_with_oauthbearer_tokens_the_broker_validates(
        broker: OAuthBroker, tokens: TokenServer, topics: Topics, db_url: str, token_secret: str) -> None:
    def connection(client: str) -> KafkaConnection:
        return broker.connection(client).for_service(client)

    assert connection("sdk").describe() == (
        f"127.0.0.1:{SASL_PORT} over SASL_PLAINTEXT as sdk (OAUTHBEARER from 127.0.0.1)")
    await wait_for(lambda: _ensured(connection("cli"), topics), timeout_s=60, what="the topics, over OAUTHBEARER")
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, ORDERS.name, ORDERS.uri)
            await sync_dags(conn, LoadResult(root="/dags/orders.py", dags=[LoadedDag(DAG, "/dags/orders.py")]))
    finally:
        await engine.dispose()
    persister = PersisterConfig(kafka=connection("persister"), database_url=db_url, token_secret=token_secret,
                                topics=topics)
    scheduler = SchedulerConfig(kafka=connection("scheduler"), database_url=db_url, topics=topics,
                                republish_interval_s=1.0)
    async with Persister(persister), Scheduler(scheduler):
        token = task_token(token_secret, "ingest", "run-1", "load")
        async with AsyncEmitter(connection("sdk"), token, topics=topics, receipt_timeout_s=30) as emitter:
            first = await emitter.emit(ORDERS, partition_key="2026-12-01", dedupe_key="batch-1")
            again = await emitter.emit(ORDERS, partition_key="2026-12-01", dedupe_key="batch-1")
            second = await emitter.emit(ORDERS, partition_key="2026-12-02", dedupe_key="batch-2")
        assert (first.status, again.status, second.status) == (ReceiptStatus.ACCEPTED, ReceiptStatus.DUPLICATE,
                                                               ReceiptStatus.ACCEPTED)
        assert again.event_id == first.event_id
        signals = await _signals(connection("bridge"), topics, 2)
    assert sorted((s.dag_id, s.partition_key) for s in signals) == [(DAG.dag_id, "2026-12-01"),
                                                                    (DAG.dag_id, "2026-12-02")]
    # one token per client, shared by its producer, consumers and admin connections (valid for an hour)
    assert tokens.issued == {client: 1 for client in ("cli", "sdk", "persister", "scheduler", "bridge")}


async def _ensured(cli: KafkaConnection, topics: Topics) -> bool:
    try:
        await ensure_topics(cli, topics)
    except KafkaError:
        return False
    return True


async def _signals(bridge: KafkaConnection, topics: Topics, count: int) -> list[ReadinessSignal]:
    consumer = AIOKafkaConsumer(topics.readiness(DAG.dag_id), **bridge.client_kwargs("consumer"),
                                group_id=f"{topics.prefix}-bridge", enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        signals: list[ReadinessSignal] = []

        async def signalled() -> bool:
            batches = await consumer.getmany(timeout_ms=500)
            signals.extend(ReadinessSignal.model_validate_json(r.value) for rs in batches.values() for r in rs)
            return len(signals) >= count

        await wait_for(signalled, timeout_s=60, what="the readiness signals, read over OAUTHBEARER")
    finally:
        await consumer.stop()
    return signals


async def test_a_wrong_client_secret_stops_the_sdk_at_start_with_one_line_naming_the_settings(
        broker: OAuthBroker, tokens: TokenServer, topics: Topics, token_secret: str) -> None:
    refused_before = tokens.refused
    wrong = broker.connection("sdk", secret="not-the-secret")
    token = task_token(token_secret, "ingest", "run-1", "load")
    with pytest.raises(OAuthCredentialsRefused) as caught:
        async with AsyncEmitter(wrong, token, topics=topics, receipt_timeout_s=5):
            pass
    assert f"error: {caught.value}" == REFUSED
    assert tokens.refused > refused_before


async def test_a_persister_with_a_wrong_client_secret_exits_at_once_with_one_line(
        broker: OAuthBroker, topics: Topics, db_url: str, token_secret: str) -> None:
    env = {**os.environ, **broker.environment("persister", secret="not-the-secret"), "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret, "COLUMNS": "300"}
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "persister", "--startup-timeout-s", "60", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output = (await asyncio.wait_for(process.communicate(), 120))[0].decode(errors="replace")
    assert process.returncode == OAuthCredentialsRefused.exit_code, output
    assert time.monotonic() - started < 45, "it waited for the start-up timeout instead of stopping at once"
    assert [line for line in output.splitlines() if line.startswith("error:")] == [REFUSED], output
    assert "Traceback" not in output and "not-the-secret" not in output


async def test_a_token_for_another_audience_is_refused_by_the_broker_and_nothing_is_sent(
        broker: OAuthBroker, tokens: TokenServer, topics: Topics) -> None:
    """aiokafka 0.14 takes the broker's OAUTHBEARER error challenge (`{"status":"invalid_token"}`) for a success, so
    the refusal shows on the next request (the broker closes the connection), not in `start()`."""
    cli = broker.connection("cli")
    await wait_for(lambda: _ensured(cli, topics), timeout_s=60, what="the topics, over OAUTHBEARER")
    producer = AIOKafkaProducer(**broker.connection("elsewhere").client_kwargs("producer"), request_timeout_ms=10_000)
    try:
        with pytest.raises(KafkaError):
            await asyncio.wait_for(producer.start(), 60)
            await asyncio.wait_for(producer.send_and_wait(topics.emissions, b"not for this cluster"), 60)
    finally:
        await producer.stop()
    assert tokens.issued.get("elsewhere", 0) >= 1  # it had a token; the broker did not take it
    assert await _end_offsets(cli, topics.emissions) == 0


async def _end_offsets(connection: KafkaConnection, topic: str) -> int:
    consumer = AIOKafkaConsumer(**connection.client_kwargs("consumer"), enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer._client.add_topic(topic)
        partitions = [TopicPartition(topic, p) for p in consumer._client.cluster.partitions_for_topic(topic) or ()]
        assert partitions, f"{topic} has no partitions"
        return sum((await consumer.end_offsets(partitions)).values())
    finally:
        await consumer.stop()


async def test_a_token_is_replaced_before_it_expires_and_the_broker_takes_the_new_one(
        broker: OAuthBroker, tokens: TokenServer) -> None:
    short = broker.connection("short-lived")

    async def sign_in() -> int:
        """A new client (so new connections, each asking the provider for a token); the tokens issued so far."""
        admin = AIOKafkaAdminClient(**short.client_kwargs(), request_timeout_ms=10_000)
        try:
            await admin.start()
            await admin.describe_cluster()  # aiokafka misses a refused token at sign-in: the next request fails
        finally:
            await admin.close()
        return tokens.issued.get("short-lived", 0)

    assert await sign_in() == 1
    assert await sign_in() == 1  # the cached token

    async def refreshed() -> bool:
        return await sign_in() >= 2

    await wait_for(refreshed, timeout_s=3 * SHORT_LIFETIME_S, interval=0.3, what="a second token")
    first, second = tokens.issued_at["short-lived"][:2]
    # at 80% of its lifetime, before it expired. The provider counts the lifetime from when it sent the request,
    # a few milliseconds before the server stamped its first token: allow that much (0.25 s), never more.
    assert 0.8 * SHORT_LIFETIME_S - 0.25 <= second - first < SHORT_LIFETIME_S
