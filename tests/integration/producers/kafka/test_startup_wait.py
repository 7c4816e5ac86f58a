"""Services started while Kafka (or PostgreSQL) is unreachable log their waiting, then exit with one clear line."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from assetbus.cli.failures import ExitCode
from assetbus.infra.ports import free_port
from assetbus.producers.kafka import EXIT_STARTUP_TIMEOUT
from assetbus.producers.kafka.startup import EXIT_BROKER_NOT_TRUSTED
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.untrusted_tls import untrusted_tls_server

ASSETBUS = str(Path(sys.executable).parent / "assetbus")


async def run_service(env: dict[str, str], *args: str, timeout_s: float = 90) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(ASSETBUS, *args, env={**os.environ, "COLUMNS": "200", **env},
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    return process.returncode if process.returncode is not None else -1, out.decode(), err.decode()


async def topics_of(infra: Settings, prefix: str) -> list[str]:
    admin = AIOKafkaAdminClient(**infra.kafka.client_kwargs())
    await admin.start()
    try:
        return [name for name in await admin.list_topics() if name.startswith(f"{prefix}.")]
    finally:
        await admin.close()


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


SERVICE_ARGS = {"persister": (), "scheduler": (), "api": (), "airflow-bridge": ("--dag", "orders")}
"""What each service needs besides the connections (the bridge: a DAG, and an Airflow account below)."""


@pytest.mark.parametrize("service", list(SERVICE_ARGS))
async def test_a_service_started_while_kafka_is_unreachable_waits_then_exits_with_one_line(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, service: str) -> None:
    port = free_port()
    env = {"KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}", "KAFKA_SASL_PASSWORD": "never-shown",
           "DATABASE_URL": db_url, "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret,
           "ASSETBUS_AIRFLOW_URL": f"http://127.0.0.1:{free_port()}", "ASSETBUS_AIRFLOW_PASSWORD": "never-shown"}
    if service == "api":
        del env["ASSETBUS_AIRFLOW_URL"]  # the API would check the account's minting key as well
    code, out, err = await run_service(env, "run", service, *SERVICE_ARGS[service], "--startup-timeout-s", "3")
    everything = out + err
    assert code == EXIT_STARTUP_TIMEOUT, everything
    assert everything.count(f"waiting for Kafka at 127.0.0.1:{port}") >= 2, everything  # each attempt is logged
    assert error_lines(err) == [f"error: Kafka at 127.0.0.1:{port} over PLAINTEXT is unreachable after 3s (check "
                                "KAFKA_BOOTSTRAP_SERVERS and the other KAFKA_* settings)"], err
    assert "Traceback" not in everything
    assert "never-shown" not in everything


async def test_a_persister_started_while_postgresql_is_unreachable_names_the_database_not_its_password(
        infra: Settings, topics: Topics, token_secret: str) -> None:
    port = free_port()
    env = {"KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "ASSETBUS_TOPIC_PREFIX": topics.prefix,
           "DATABASE_URL": f"postgresql://assetbus:secret-pw@127.0.0.1:{port}/assetbus",
           "ASSETBUS_TOKEN_SECRET": token_secret}
    code, out, err = await run_service(env, "run", "persister", "--startup-timeout-s", "3")
    everything = out + err
    assert code == EXIT_STARTUP_TIMEOUT, everything
    assert "waiting for PostgreSQL at" in everything
    (line,) = error_lines(err)
    assert line.startswith(f"error: PostgreSQL at postgresql+asyncpg://assetbus:***@127.0.0.1:{port}/assetbus is "
                           "unreachable after 3s"), line
    assert "secret-pw" not in everything and "Traceback" not in everything


STARTUP_TIMEOUT_S = 60
"""Long, so that a service that waits for its topics (instead of exiting at once) is told apart from one that only
starts slowly on a loaded machine (its imports alone took up to 25 s beside a busy suite)."""
SERVICES = {"persister": (), "scheduler": (), "api": (), "airflow-bridge": ("--dag", "orders"),
            "airflow-forwarder": ()}
"""Every `assetbus run` service (the bridge and the forwarder with an Airflow account that is never called)."""


@pytest.mark.parametrize("create_topics", [True, False], ids=["migrate-creates", "platform-creates"])
@pytest.mark.parametrize("service", list(SERVICES))
async def test_a_service_whose_topics_are_missing_exits_at_once_with_one_line_naming_them_and_the_fix(
        infra: Settings, db_url: str, token_secret: str, service: str, create_topics: bool) -> None:
    prefix = f"never{os.urandom(4).hex()}"  # no `assetbus migrate` ran for it (or a mistyped prefix)
    env = {"KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": prefix, "ASSETBUS_TOKEN_SECRET": token_secret,
           "ASSETBUS_CREATE_TOPICS": str(create_topics).lower(),
           "ASSETBUS_AIRFLOW_URL": f"http://127.0.0.1:{free_port()}", "ASSETBUS_AIRFLOW_PASSWORD": "never-shown"}
    if service == "api":
        del env["ASSETBUS_AIRFLOW_URL"]  # the API would check the account's minting key as well
    started = time.monotonic()
    code, out, err = await run_service(env, "run", service, *SERVICES[service], "--startup-timeout-s",
                                       str(STARTUP_TIMEOUT_S), timeout_s=STARTUP_TIMEOUT_S + 30)
    took = time.monotonic() - started
    (line,) = error_lines(err)
    assert f"missing topic(s) on {infra.bootstrap_servers} over PLAINTEXT: {prefix}." in line, err
    if create_topics:
        assert code == ExitCode.NOT_MIGRATED, out + err
        assert "run `assetbus migrate`" in line
    else:
        assert code == ExitCode.TOPICS_NOT_CREATED, out + err
        assert "ASSETBUS_CREATE_TOPICS=false" in line and "assetbus topics plan" in line
    assert "Traceback" not in out + err
    assert took < STARTUP_TIMEOUT_S - 15, f"{service} took {took:.0f}s to give up: it waited for its topics"
    assert not await topics_of(infra, prefix), f"{service} created topics of its own"


async def test_a_persister_that_does_not_trust_the_brokers_certificate_stops_at_once_with_one_line(
        db_url: str, topics: Topics, token_secret: str, tmp_path: Path) -> None:
    """Every handshake fails (the CA given did not sign the broker's certificate): waiting cannot fix that,
    so the start ends at its first attempt, naming the broker, the reason and the setting. Nothing else
    reports it again (uvloop left the failure in a future nobody awaited, and asyncio logged it as
    `Future exception was never retrieved` with a traceback)."""
    with untrusted_tls_server(tmp_path) as server:
        env = {"KAFKA_BOOTSTRAP_SERVERS": server.address, "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
               "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SASL_USERNAME": "assetbus",
               "KAFKA_SASL_PASSWORD": "never-shown", "KAFKA_SSL_CAFILE": str(server.other_ca),
               "DATABASE_URL": db_url, "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}
        started = time.monotonic()
        code, out, err = await run_service(env, "run", "persister", "--startup-timeout-s", "60")
        took = time.monotonic() - started
    everything = out + err
    assert code == EXIT_BROKER_NOT_TRUSTED, everything
    assert took < 30, f"the start waited {took:.0f}s for what waiting cannot fix"
    assert error_lines(err) == [
        f"error: Kafka at {server.address} over SASL_SSL as assetbus (SCRAM-SHA-512) is not trusted: the certificate "
        f"of {server.address} failed verification (self-signed certificate); check KAFKA_SSL_CAFILE (and "
        "KAFKA_SSL_CHECK_HOSTNAME)"], err
    assert "Traceback" not in everything and "never retrieved" not in everything, everything
    assert "never-shown" not in everything
