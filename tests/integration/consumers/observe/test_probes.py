"""`/healthz` and `/readyz` for real: the scheduler's probe server and the API answer ready only when the
broker answers, the database answers and its schema is at the migrations' head."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from alembic import command
from prometheus_client import CollectorRegistry

from assetbus.consumers.api import ApiConfig
from assetbus.consumers.api.ui_auth import operator_token
from assetbus.consumers.observe import ProbeServer, ReadinessChecks
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.scheduler import Scheduler, SchedulerConfig
from assetbus.infra.ports import free_port
from assetbus.migrate import alembic_config
from assetbus.migrations.heads import migration_heads
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import replaced, wait_for


@pytest.fixture
def api_config(api_config: ApiConfig) -> ApiConfig:
    """The shared API config with the lag and dead-letter gauges on (the route tests leave them off)."""
    return replaced(api_config, pipeline_gauges_interval_s=15.0)


async def _get(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.get(url)


async def test_the_scheduler_serves_metrics_and_is_ready_at_the_migrations_head(
        scheduler_config: SchedulerConfig) -> None:
    config = replaced(scheduler_config, metrics_port=0, metrics_host="127.0.0.1")
    async with Scheduler(config) as scheduler:
        base = f"http://127.0.0.1:{scheduler.metrics_port}"
        alive, ready, metrics = await asyncio.gather(_get(f"{base}/healthz"), _get(f"{base}/readyz"),
                                                     _get(f"{base}/metrics"))
    assert alive.status_code == 200 and alive.json()["status"] == "alive"
    assert ready.status_code == 200, ready.text
    checks = ready.json()["checks"]
    assert {name: c["ok"] for name, c in checks.items()} == {"broker": True, "database": True, "migrations": True,
                                                                 "kafka_access": True}
    assert checks["migrations"]["detail"] == f"at head {', '.join(sorted(migration_heads()))}"
    assert "assetbus_scheduler_readiness_latency_seconds_bucket" in metrics.text
    assert "assetbus_scheduler_consumer_lag" in metrics.text


async def test_a_database_behind_the_head_is_not_ready_and_says_to_migrate(infra: Settings, db_url: str) -> None:
    await asyncio.to_thread(command.downgrade, alembic_config(db_url), "0003")
    checks = ReadinessChecks(broker=KafkaConnection(bootstrap_servers=infra.bootstrap_servers), database_url=db_url)
    with ProbeServer(CollectorRegistry(), 0, "127.0.0.1", checks=checks) as probes:
        answer = await _get(f"http://127.0.0.1:{probes.port}/readyz")
    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "not_ready"
    assert body["checks"]["broker"]["ok"] and body["checks"]["database"]["ok"]
    assert not body["checks"]["migrations"]["ok"]
    detail = body["checks"]["migrations"]["detail"]
    assert "['0003']" in detail and "assetbus migrate" in detail


async def test_an_unreachable_broker_and_database_are_not_ready() -> None:
    checks = ReadinessChecks(broker=KafkaConnection(bootstrap_servers="127.0.0.1:1"),
                             database_url="postgresql+asyncpg://nobody:x@127.0.0.1:1/none", timeout_s=3)
    report = await checks.check()
    assert not report.ready
    assert {name: c.ok for name, c in report.checks.items()} == {"broker": False, "database": False,
                                                                 "migrations": False}


async def test_healthz_fails_while_the_services_event_loop_is_stuck() -> None:
    with ProbeServer(CollectorRegistry(), 0, "127.0.0.1", loop_timeout_s=0.3) as probes:
        url = f"http://127.0.0.1:{probes.port}/healthz"
        assert (await _get(url)).status_code == 200
        answers: list[int] = []
        probing = threading.Thread(target=lambda: answers.append(httpx.get(url, timeout=10).status_code))
        probing.start()
        time.sleep(1.0)  # noqa: ASYNC251 - the defect under test: a blocked event loop
        probing.join(timeout=10)
    assert answers == [503]


async def test_the_api_answers_the_probes_and_counts_requests_by_route(api_client: httpx.AsyncClient,
                                                                       topics: Topics, token_secret: str) -> None:
    assert (await api_client.get("/healthz")).json() == {"status": "alive"}
    assert (await api_client.get("/health")).json()["status"] == "ok"
    ready = await api_client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
    operator = {"Authorization": f"Bearer {operator_token(token_secret, 'probe')}"}
    assert (await api_client.get("/ui/api/events/424242", headers=operator)).status_code == 404
    text = (await api_client.get("/metrics")).text
    assert 'assetbus_api_requests_total{method="GET",route="/ui/api/events/{event_id}",status="404"} 1.0' in text
    assert "assetbus_api_request_seconds_bucket" in text
    assert "assetbus_build_info{" in text
    assert "# TYPE assetbus_log_lines_suppressed_total counter" in text

    async def dead_letter_counter() -> bool:  # the pipeline gauges' first refresh runs as the API starts
        metrics = (await api_client.get("/metrics")).text
        return f'assetbus_dead_letters_total{{topic="{topics.emissions_dlq}"}} 0.0' in metrics

    await wait_for(dead_letter_counter, what="the dead-letter counter of this prefix")


async def test_the_persister_serves_its_probes_beside_its_metrics(persister_config: PersisterConfig) -> None:
    async with Persister(replaced(persister_config, metrics_port=0, metrics_host="127.0.0.1")) as persister:
        base = f"http://127.0.0.1:{persister.metrics_port}"
        alive, ready, metrics = await asyncio.gather(_get(f"{base}/healthz"), _get(f"{base}/readyz"),
                                                     _get(f"{base}/metrics"))
    assert (alive.status_code, alive.json()["detail"]) == (200, "event loop turning")
    assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
    assert "assetbus_persister_db_commit_seconds_bucket" in metrics.text
    assert 'assetbus_build_info{python=' in metrics.text and 'version="' in metrics.text
    assert "# TYPE assetbus_log_lines_suppressed_total counter" in metrics.text


async def test_readiness_is_per_role_a_broker_outage_degrades_the_api_but_stops_the_persister(
        db_url: str, topics: Topics, token_secret: str) -> None:
    """The API serves task and asset state from PostgreSQL alone: with the broker away it stays ready
    (`degraded`, 200) so a load balancer keeps it; the persister, which can do nothing without Kafka, is not."""
    from assetbus.consumers.api import create_api

    away = KafkaConnection(bootstrap_servers=f"127.0.0.1:{free_port()}")
    app = create_api(ApiConfig(kafka=away, database_url=db_url, topics=topics, token_secret=token_secret))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        answer = await client.get("/readyz")
    body = answer.json()
    assert (answer.status_code, body["status"]) == (200, "degraded"), answer.text
    assert not body["checks"]["broker"]["ok"] and body["checks"]["database"]["ok"]

    persister_side = ReadinessChecks(broker=away, database_url=db_url, timeout_s=3)
    report = await persister_side.check()
    assert not report.ready and report.status == "not_ready"
