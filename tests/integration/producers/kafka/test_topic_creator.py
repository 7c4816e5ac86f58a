"""The topic creator against the real broker: missing topics created with the asked settings, weaker ones reported."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from assetbus.producers.kafka import TopicCreationFailed, TopicCreator, TopicSpec, delete_topics
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import core_specs
from tests.helpers import wait_for


async def topic_config(infra: Settings, topic: str, name: str) -> str:
    """One config value of a topic (waiting until the broker knows a topic created a moment ago)."""
    admin = AIOKafkaAdminClient(**infra.kafka.client_kwargs())
    await admin.start()

    async def value() -> str | None:
        (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {name: None})])
        (resource,) = response.to_object()["resources"]
        entries = resource["config_entries"]
        return str(entries[0]["config_value"]) if entries else None

    try:
        return await wait_for(value, timeout_s=15, what=f"{name} of {topic}")
    finally:
        await admin.close()


async def settled(infra: Settings, topics: Topics) -> None:
    """Wait until the broker describes the test's fresh topics as they were created."""
    async def as_created() -> bool:
        report = await TopicCreator(infra.kafka).ensure(core_specs(topics))
        return not report.created and not report.weaker

    await wait_for(as_created, timeout_s=15, what="the fresh topics to be described")


async def test_existing_topics_as_configured_are_neither_created_nor_reported(infra: Settings,
                                                                            topics: Topics) -> None:
    await settled(infra, topics)  # fails unless, once the broker knows them, nothing is created or reported
    report = await TopicCreator(infra.kafka).ensure(core_specs(topics))
    assert (report.replication_factor, report.min_insync_replicas) == (1, 1)  # one local broker


async def test_existing_topics_weaker_than_asked_are_reported_not_changed(infra: Settings, topics: Topics) -> None:
    await settled(infra, topics)
    report = await TopicCreator(infra.kafka, min_insync_replicas=2).ensure(core_specs(topics, partitions=8))
    found = {(w.name, w.setting): (w.wanted, w.actual) for w in report.weaker}
    for name in (topics.emissions, topics.receipts, topics.asset_events):
        assert found[(name, "partitions")] == (8, 6)
    for name in topics.core():
        assert found[(name, "min.insync.replicas")] == (2, 1)
    assert report.created == []
    assert await topic_config(infra, topics.emissions, "min.insync.replicas") == "1"  # untouched


async def test_a_missing_topic_is_created_with_its_min_isr_and_configs(infra: Settings, topics: Topics) -> None:
    name = f"{topics.prefix}.created"
    try:
        report = await TopicCreator(infra.kafka).ensure([TopicSpec(name, 2, {"retention.ms": "3600000"})])
        assert report.created == [name]
        assert await topic_config(infra, name, "min.insync.replicas") == "1"
        assert await topic_config(infra, name, "retention.ms") == "3600000"
    finally:
        await delete_topics(infra.kafka, [name])


async def test_a_replication_factor_above_the_broker_count_is_one_clear_error(infra: Settings,
                                                                            topics: Topics) -> None:
    brokers = (await TopicCreator(infra.kafka).ensure([])).replication_factor
    if brokers > 1:
        pytest.skip("needs the single-broker setup")
    name = f"{topics.prefix}.replicated"
    try:
        with pytest.raises(TopicCreationFailed, match=r"cannot create topic .* with 3 replica\(s\)"):
            await TopicCreator(infra.kafka, replication_factor=3).ensure([TopicSpec(name, 1)])
    finally:
        await delete_topics(infra.kafka, [name])


async def migrate(infra: Settings, db_url: str, topics: Topics, *args: str, **env: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "migrate", *args,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
             "ASSETBUS_TOPIC_PREFIX": topics.prefix, "COLUMNS": "200", **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await process.communicate()
    return process.returncode if process.returncode is not None else -1, out.decode()


async def test_migrate_exits_non_zero_on_weaker_topics_unless_told_to_accept_them(
        infra: Settings, db_url: str, topics: Topics) -> None:
    code, out = await migrate(infra, db_url, topics, ASSETBUS_TOPIC_MIN_INSYNC_REPLICAS="2")
    assert code == 3, out
    assert f"weaker topic: {topics.emissions}: min.insync.replicas is 1, configured 2" in out
    assert "4 existing topic setting(s) weaker than configured" in out
    assert "database: at head" in out  # the schema is still migrated

    code, out = await migrate(infra, db_url, topics, "--accept-weaker-topics",
                              ASSETBUS_TOPIC_MIN_INSYNC_REPLICAS="2")
    assert code == 0, out
    code, out = await migrate(infra, db_url, topics)
    assert code == 0 and "weaker" not in out, out


async def test_created_topics_are_listed_by_the_next_client_at_once(infra: Settings, topics: Topics) -> None:
    names = [f"{topics.prefix}.visible.{n}" for n in range(12)]
    try:
        for name in names:  # one at a time: each create is followed at once by a fresh client's metadata request
            report = await TopicCreator(infra.kafka).ensure([TopicSpec(name, 3)], check_existing=False)
            assert report.created == [name]
            admin = AIOKafkaAdminClient(**infra.kafka.client_kwargs())
            await admin.start()
            try:
                (described,) = await admin.describe_topics([name])
            finally:
                await admin.close()
            assert described["error_code"] == 0, f"{name} missing right after ensure() returned"
            assert [p["leader"] >= 0 for p in described["partitions"]] == [True] * 3
    finally:
        await delete_topics(infra.kafka, names)
