"""Every `assetbus run` service behaves the same at its edges: SIGTERM is a clean stop with exit code 0, and
a start that fails leaves nothing open behind it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from assetbus.infra.ports import free_port
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.producers.kafka.test_startup_wait import SERVICES, error_lines

ASSETBUS = str(Path(sys.executable).parent / "assetbus")


def service_env(infra: Settings, db_url: str, topics: Topics, token_secret: str, service: str) -> dict[str, str]:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret, "COLUMNS": "200",
           "ASSETBUS_AIRFLOW_URL": f"http://127.0.0.1:{free_port()}", "ASSETBUS_AIRFLOW_PASSWORD": "never-shown"}
    if service == "api":
        del env["ASSETBUS_AIRFLOW_URL"]
    return env


async def ready(port: int, path: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            return (await client.get(f"http://127.0.0.1:{port}{path}")).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize("service", list(SERVICES))
async def test_sigterm_stops_every_service_cleanly_with_exit_code_zero(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, service: str) -> None:
    port = free_port()
    port_option = ("--port", str(port)) if service == "api" else ("--metrics-port", str(port))
    if service == "airflow-bridge":  # its DAG's readiness topic is the scheduler's to create
        from assetbus.consumers.scheduler.topics import create_readiness_topics
        await create_readiness_topics(infra.kafka, topics, ["orders"])
    process = await asyncio.create_subprocess_exec(
        ASSETBUS, "run", service, *SERVICES[service], *port_option, "--startup-timeout-s", "20",
        env=service_env(infra, db_url, topics, token_secret, service),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await wait_for(lambda: ready(port, "/healthz"), timeout_s=60, what=f"{service} serving /healthz")
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    everything = out.decode() + err.decode()
    assert process.returncode == 0, everything[-3000:]
    assert "Traceback" not in everything and error_lines(err.decode()) == [], everything[-3000:]
    assert time.monotonic() - started < 20, f"{service} took {time.monotonic() - started:.0f}s to stop"
    if service != "api":  # the services' one base says that it stopped (uvicorn says it for the API)
        assert [line for line in err.decode().splitlines() if line.endswith(" msg=stopped")], everything[-3000:]


@pytest.mark.parametrize("service", list(SERVICES))
async def test_sigterm_while_a_service_waits_for_kafka_stops_it_at_once_with_exit_code_zero(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, service: str, tmp_path: Path) -> None:
    """Before: the signal was taken, and the service went on waiting until its start-up timeout (then 75)."""
    env = {**service_env(infra, db_url, topics, token_secret, service),
           "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}"}  # no broker: the start-up wait goes on
    log = tmp_path / f"{service}.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            ASSETBUS, "run", service, *SERVICES[service], "--startup-timeout-s", "60", env=env, stdout=out,
            stderr=out)
    try:
        await wait_for(lambda: _true("waiting for Kafka" in log.read_text(errors="replace")), timeout_s=60,
                       what=f"{service} waiting for Kafka")
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    everything = log.read_text(errors="replace")
    assert (code, "Traceback" in everything) == (0, False), everything[-3000:]
    assert time.monotonic() - started < 10, f"{service} took {time.monotonic() - started:.0f}s to stop"


async def _true(value: bool) -> bool:
    return value


async def connections_to(admin: AsyncEngine, database: str) -> int:
    async with admin.connect() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d"),
                                       {"d": database})).scalar_one())


async def test_a_start_that_fails_after_the_database_answered_leaves_no_connection_consumer_or_port_open(
        infra: Settings, topics: Topics) -> None:
    """The scheduler reaches PostgreSQL (its start-up probe pools a connection), then fails on a database that
    was never migrated: the start raises, and nothing of it stays open: no connection, no consumer, no port."""
    from assetbus.consumers.scheduler import Scheduler, SchedulerConfig

    name = f"unmigrated_{os.urandom(4).hex()}"
    admin = create_async_engine(infra.database_url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    probe_port = free_port()
    try:
        url = make_url(infra.database_url).set(database=name).render_as_string(hide_password=False)
        scheduler = Scheduler(SchedulerConfig(kafka=infra.kafka, database_url=url, topics=topics, startup_timeout_s=5,
                                              metrics_port=probe_port, metrics_host="127.0.0.1"))
        with pytest.raises(Exception, match="consumer_dags"):
            await scheduler.start()
        await wait_for(lambda: _none(admin, name), timeout_s=5, what="the scheduler's connections closed")
        assert scheduler.shell.consumer is None and scheduler.metrics_port is None
        assert not await ready(probe_port, "/healthz")
        await scheduler.stop()  # harmless after a failed start
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


async def _none(admin: AsyncEngine, database: str) -> bool:
    return await connections_to(admin, database) == 0
