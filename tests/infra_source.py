"""Where the tests' Kafka and PostgreSQL come from.

1. `KAFKA_BOOTSTRAP_SERVERS` / `DATABASE_URL` set: those, nothing is started.
2. Otherwise, a reachable Docker engine: throw-away containers through testcontainers (the same
   Kafka version as the launcher, `apache/kafka` in KRaft mode, and `postgres:15`).
3. Otherwise (these build machines have no engine): the launcher, `assetbus infra up`.

`ASSETBUS_TEST_INFRA=launcher|testcontainers` forces a choice.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from assetbus.infra.ports import free_port


def docker_engine_reachable() -> bool:
    try:
        from testcontainers.core.docker_client import DockerClient

        return bool(DockerClient().client.ping())
    except Exception:
        return False


def use_testcontainers() -> bool:
    forced = os.environ.get("ASSETBUS_TEST_INFRA")
    if forced:
        return forced == "testcontainers"
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or os.environ.get("DATABASE_URL"):
        return False
    return docker_engine_reachable()


@contextlib.contextmanager
def containers(kafka_version: str) -> Iterator[tuple[str, str]]:
    """Start Kafka and PostgreSQL containers; yields (bootstrap servers, database URL)."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs
    from testcontainers.postgres import PostgresContainer

    port = free_port()
    kafka = (
        DockerContainer(f"apache/kafka:{kafka_version}")
        .with_bind_ports(port, port)
        .with_envs(
            KAFKA_NODE_ID="1",
            KAFKA_PROCESS_ROLES="broker,controller",
            KAFKA_LISTENERS=f"PLAINTEXT://:{port},CONTROLLER://:9093",
            KAFKA_ADVERTISED_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}",
            KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            KAFKA_CONTROLLER_LISTENER_NAMES="CONTROLLER",
            KAFKA_CONTROLLER_QUORUM_VOTERS="1@localhost:9093",
            KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1",
            KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR="1",
            KAFKA_TRANSACTION_STATE_LOG_MIN_ISR="1",
            KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
            KAFKA_AUTO_CREATE_TOPICS_ENABLE="false",
        )
    )
    postgres = PostgresContainer("postgres:15", username="assetbus", password="assetbus", dbname="assetbus",
                                 driver="asyncpg")
    with kafka, postgres:
        wait_for_logs(kafka, "Kafka Server started", timeout=120)
        yield f"127.0.0.1:{port}", postgres.get_connection_url()
