"""The bridge's topics, against the real broker and database (no Airflow: its reads are stubbed or unreachable).

- On a prefix whose asset-events topic does not exist (a typo), `assetbus run airflow-bridge` refuses to start
  with one line naming it, and creates no topic.
- With ASSETBUS_CREATE_TOPICS=false a DAG whose readiness topic is missing is not served, and a warning names
  the topic; the bridge creates nothing, and serves the DAG from the sync that finds the topic.
- Otherwise the readiness topic it creates has the configured `readiness_partitions`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from assetbus.consumers.airflow import AirflowAccount, AirflowBridge, BridgeConfig
from assetbus.consumers.airflow import bridge as bridge_module
from assetbus.consumers.airflow.declared import DeclaredReport
from assetbus.consumers.airflow.sync import AirflowSyncReport
from assetbus.consumers.storage.dags import SyncChange
from assetbus.infra.ports import free_port
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

ASSETBUS = str(Path(sys.executable).parent / "assetbus")


@pytest.fixture
def dag() -> str:
    return f"bridge_topics_{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def dropped(infra: Settings, topics: Topics, dag: str) -> AsyncIterator[None]:
    yield
    await delete_topics(infra.kafka, [topics.readiness(dag)])


@pytest.fixture
def airflow_serves(monkeypatch: pytest.MonkeyPatch, dag: str) -> None:
    """Airflow, as the bridge's sync reads it: no assets, and `dag` tagged `assetbus` with a rule."""

    async def tagged(*args: object, **kwargs: object) -> tuple[AirflowSyncReport, DeclaredReport]:
        return AirflowSyncReport(), DeclaredReport(changes={dag: SyncChange.UNCHANGED})

    monkeypatch.setattr(bridge_module, "sync_from_airflow", tagged)


def _config(infra: Settings, db_url: str, topics: Topics, **more: Any) -> BridgeConfig:
    return BridgeConfig(kafka=infra.kafka, database_url=db_url, topics=topics, sync_interval_s=0,
                        airflow=AirflowAccount(url=f"http://127.0.0.1:{free_port()}", username="u", password="p"),
                        **more)


async def _partitions(kafka: KafkaConnection, topic: str) -> int | None:
    """The topic's partition count, None if it does not exist."""
    admin = AIOKafkaAdminClient(**kafka.client_kwargs())
    await admin.start()
    try:
        if topic not in await admin.list_topics():
            return None
        return len((await admin.describe_topics([topic]))[0]["partitions"])
    finally:
        await admin.close()


async def test_a_bridge_on_a_prefix_without_core_topics_refuses_to_start_in_one_line(
        infra: Settings, db_url: str) -> None:
    mistyped = Topics(prefix=f"typo{uuid.uuid4().hex[:8]}")
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": mistyped.prefix, "ASSETBUS_AIRFLOW_URL": f"http://127.0.0.1:{free_port()}",
           "ASSETBUS_AIRFLOW_PASSWORD": "never-shown", "COLUMNS": "300"}
    process = await asyncio.create_subprocess_exec(ASSETBUS, "run", "airflow-bridge", "--startup-timeout-s", "10",
                                                   env=env, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError("the bridge on a mistyped prefix started and kept running") from None
    assert process.returncode == 6, out.decode() + err.decode()  # NOT_MIGRATED, as docs/cli.md lists
    errors = [line for line in err.decode().splitlines() if line.startswith("error:")]
    assert errors == [f"error: missing topic(s) on {infra.kafka.describe()}: {mistyped.asset_events}; run `assetbus "
                      "migrate`, or check ASSETBUS_TOPIC_PREFIX (a mistyped prefix names topics nobody created)"], \
        err.decode()
    admin = AIOKafkaAdminClient(**infra.kafka.client_kwargs())
    await admin.start()
    try:
        assert [t for t in await admin.list_topics() if t.startswith(mistyped.prefix)] == []
    finally:
        await admin.close()


async def test_without_topic_creation_a_missing_readiness_topic_is_named_and_waited_for_not_created(
        infra: Settings, db_url: str, topics: Topics, dag: str, dropped: None, airflow_serves: None,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="assetbus.airflow.bridge")
    async with AirflowBridge(_config(infra, db_url, topics, create_topics=False)) as bridge:
        assert bridge.dag_ids == []
        assert await _partitions(infra.kafka, topics.readiness(dag)) is None  # the bridge created nothing
        said = [r.getMessage() for r in caplog.records if topics.readiness(dag) in r.getMessage()]
        assert len(said) == 1 and "ASSETBUS_CREATE_TOPICS=false" in said[0], said
        assert await bridge.sync_once() == []  # still missing: not served, and not said again
        assert len([r for r in caplog.records if topics.readiness(dag) in r.getMessage()]) == 1

        await ensure_topics(infra.kafka, topics, {topics.readiness(dag): 1})  # as the scheduler (or a platform) would
        assert await bridge.sync_once() == [dag]
        assert bridge.dag_ids == [dag]


async def test_the_readiness_topic_the_bridge_creates_has_the_configured_partitions(
        infra: Settings, db_url: str, topics: Topics, dag: str, dropped: None, airflow_serves: None) -> None:
    async with AirflowBridge(_config(infra, db_url, topics, readiness_partitions=2)) as bridge:
        assert bridge.dag_ids == [dag]
    assert await _partitions(infra.kafka, topics.readiness(dag)) == 2
