"""The cluster's SASL_SSL listener (SCRAM-SHA-512, self-signed CA): the flow runs over it, persister included; a wrong
password or an untrusted CA stops a client at start-up with the reason logged and `assetbus run persister` with one
line and a non-zero exit, and nothing reaches the topic."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import ReceiptStatus, Topics
from tests.cluster.flow import Flow, read_receipts, spread_assets, spread_commands, stream
from tests.cluster.harness import LocalCluster
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import (
    PersisterProcess,
    end_offsets,
    stored_command_ids,
    stored_count,
)

N = 2_000
SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"
"""Public CAs only: they did not sign the local cluster's certificate."""


async def test_emissions_and_receipts_over_sasl_ssl_with_scram_are_stored_and_answered_once(
        cluster: LocalCluster, cluster_topics: Topics, engine: AsyncEngine, token: str,
        persisters: Callable[..., Awaitable[PersisterProcess]]) -> None:
    secure = cluster.secure_connection()
    assert secure.describe().endswith("over SASL_SSL as assetbus (SCRAM-SHA-512)")
    assets = await spread_assets(engine, cluster_topics.core()[cluster_topics.emissions])
    items = spread_commands(token, cluster_topics, assets, N)
    persister = await persisters(secure.bootstrap, env=cluster.secure_environment())
    flow, stop = Flow(), asyncio.Event()
    reader = asyncio.create_task(read_receipts(secure, cluster_topics.receipts, flow, stop))
    try:
        await stream(secure, cluster_topics.emissions, items, flow, rate_per_s=2_000)

        async def answered() -> bool:
            return flow.answered >= N

        await wait_for(answered, timeout_s=120, interval=0.2, what=f"receipts over SASL_SSL ({flow.answered} of {N})")
    finally:
        stop.set()
        await reader
    assert set(flow.receipts) == {c.command_id for c in items}
    assert all(flow.first_receipt(c.command_id)[1].status == ReceiptStatus.ACCEPTED for c in items)
    assert await stored_count(engine) == N
    assert sorted(await stored_command_ids(engine)) == sorted(c.command_id for c in items)
    assert await persister.terminate() == 0, persister.logs()


async def _refused(connection: KafkaConnection, caplog: pytest.LogCaptureFixture) -> str:
    """Start a producer that must fail; returns what aiokafka logged about why."""
    producer = AIOKafkaProducer(**connection.client_kwargs(), acks="all", enable_idempotence=True,
                                request_timeout_ms=10_000)
    with caplog.at_level(logging.ERROR, logger="aiokafka"):
        try:
            with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
                await asyncio.wait_for(producer.start(), 60)
        finally:
            await producer.stop()
    return "\n".join(record.getMessage() for record in caplog.records)


async def test_a_wrong_scram_password_is_refused_at_start_and_nothing_is_sent(
        cluster: LocalCluster, cluster_topics: Topics, caplog: pytest.LogCaptureFixture) -> None:
    wrong = cluster.secure_connection(sasl_password="not-the-password")
    why = await _refused(wrong, caplog)
    assert "invalid credentials" in why and "SCRAM-SHA-512" in why
    assert "not-the-password" not in why and "not-the-password" not in wrong.describe()
    assert sum((await end_offsets(cluster.connection().bootstrap, cluster_topics.emissions)).values()) == 0


async def test_an_untrusted_ca_is_refused_at_start_and_nothing_is_sent(
        cluster: LocalCluster, cluster_topics: Topics, caplog: pytest.LogCaptureFixture) -> None:
    untrusted = cluster.secure_connection(ssl_cafile=None)  # the system's CAs do not know the cluster's
    why = await _refused(untrusted, caplog)
    assert "CERTIFICATE_VERIFY_FAILED" in why or "certificate verify failed" in why
    assert sum((await end_offsets(cluster.connection().bootstrap, cluster_topics.emissions)).values()) == 0


STARTUP_TIMEOUT_S = 20


async def _persister_refused(cluster: LocalCluster, topics: Topics, db_url: str, token_secret: str,
                             **overrides: str) -> tuple[int, str, float]:
    """`assetbus run persister` on the secure listener with `overrides`: its exit code, output and seconds."""
    env = {**os.environ, **cluster.secure_environment(**overrides), "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "persister", "--group-id", f"{topics.prefix}-p",
        "--startup-timeout-s", str(STARTUP_TIMEOUT_S), env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    started = time.monotonic()
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace"), time.monotonic() - started


@pytest.mark.parametrize(("override", "exit_code"), [({"KAFKA_SASL_PASSWORD": "not-the-password"}, 77),
                                                    ({"KAFKA_SSL_CAFILE": SYSTEM_CAS}, 5)],
                         ids=["wrong-password", "untrusted-ca"])
async def test_a_persister_that_cannot_authenticate_exits_at_once_with_its_code_and_one_clear_line(
        cluster: LocalCluster, cluster_topics: Topics, db_url: str, token_secret: str,
        override: dict[str, str], exit_code: int) -> None:
    code, output, seconds = await _persister_refused(cluster, cluster_topics, db_url, token_secret, **override)
    # waiting cannot fix a refused password or an untrusted certificate: no start-up wait, and not 75 (unreachable)
    assert (code, seconds < STARTUP_TIMEOUT_S / 2) == (exit_code, True), (seconds, output)
    assert "Traceback" not in output, output
    assert "not-the-password" not in output
    assert "SASL_SSL as assetbus (SCRAM-SHA-512)" in output, output  # names the connection, not the secret
    assert sum((await end_offsets(cluster.connection().bootstrap, cluster_topics.receipts)).values()) == 0
