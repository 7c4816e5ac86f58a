"""Against the real broker: the plan is what the services create, the no-create mode names what is missing,
and a static member comes back to its partitions without a rebalance, under its own client id."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.plan import build_plan
from assetbus.producers.kafka import ConsumerSettings, ServiceShell, TopicCreator, TopicsNotCreated, core_specs
from assetbus.producers.kafka.topics import EXIT_TOPICS_NOT_CREATED
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.producers.kafka.test_startup_wait import error_lines, run_service

CONFIGS = ("min.insync.replicas", "retention.ms")


async def described(infra: Settings, prefix: str) -> dict[str, tuple[int, int, dict[str, str]]]:
    """Every topic of `prefix` on the broker: (partitions, replicas, the plan's config keys with their values)."""
    admin = AIOKafkaAdminClient(**infra.kafka.client_kwargs())
    await admin.start()
    try:
        names = sorted(t for t in await admin.list_topics() if t.startswith(prefix + "."))
        layout = {t["topic"]: t["partitions"] for t in await admin.describe_topics(names)}
        configs: dict[str, dict[str, str]] = {name: {} for name in names}
        for response in await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name, dict.fromkeys(CONFIGS)) for name in names]):
            for resource in response.to_object()["resources"]:
                for entry in resource["config_entries"]:
                    configs[resource["resource_name"]][entry["config_names"]] = str(entry["config_value"])
        return {name: (len(layout[name]), min(len(p["replicas"]) for p in layout[name]), configs[name])
                for name in names}
    finally:
        await admin.close()


async def test_the_plan_lists_exactly_the_topics_migrate_and_the_scheduler_create(
        infra: Settings, topics: Topics, readiness_cleanup: None) -> None:
    dags = ["orders_daily", "billing"]
    await create_readiness_topics(infra.kafka, topics, dags)  # as the scheduler and `dags sync` do
    plan = build_plan(topics, dags, replication_factor=1)  # the local single broker: RF 1, min ISR 1
    wanted = {t.name: (t.partitions, t.replication_factor, t.configs) for t in plan.topics}

    async def as_planned() -> dict[str, Any] | None:
        found = await described(infra, topics.prefix)
        on_broker = {name: (p, r, {k: v for k, v in c.items() if k in wanted.get(name, (0, 0, {}))[2]})
                     for name, (p, r, c) in found.items()}
        return on_broker if on_broker == wanted else None

    await wait_for(as_planned, timeout_s=20, what=f"the broker's {topics.prefix}.* topics to be the plan's")
    found = await described(infra, topics.prefix)
    unplanned_retention = {name for name, (_, _, c) in found.items() if "retention.ms" not in wanted[name][2]}
    assert all(found[name][2]["retention.ms"] != "86400000" for name in unplanned_retention)


async def test_without_create_missing_topics_are_named_with_the_command_that_creates_them(infra: Settings) -> None:
    fresh = Topics(prefix=f"t{uuid.uuid4().hex[:12]}")
    with pytest.raises(TopicsNotCreated) as caught:
        await TopicCreator(infra.kafka, create=False).ensure(core_specs(fresh))
    assert caught.value.missing == [fresh.emissions, fresh.receipts, fresh.asset_events, fresh.emissions_dlq]
    assert (f"--create --topic {fresh.emissions} --partitions 6 --replication-factor 1 "
            "--config min.insync.replicas=1") in str(caught.value)
    assert not await described(infra, fresh.prefix)  # nothing was created


@pytest.mark.parametrize("args", [("run", "persister"), ("migrate",)])
async def test_a_service_or_migrate_that_may_not_create_topics_stops_naming_the_missing_one(
        infra: Settings, db_url: str, token_secret: str, args: Sequence[str]) -> None:
    fresh = Topics(prefix=f"t{uuid.uuid4().hex[:12]}")
    env = {"KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": fresh.prefix, "ASSETBUS_TOKEN_SECRET": token_secret,
           "ASSETBUS_CREATE_TOPICS": "false"}
    returncode, _, stderr = await run_service(env, *args, timeout_s=60)
    (line,) = error_lines(stderr)
    assert returncode == EXIT_TOPICS_NOT_CREATED
    assert f"missing topic(s) on {infra.bootstrap_servers} over PLAINTEXT: {fresh.emissions}," in line
    assert "ASSETBUS_CREATE_TOPICS=false" in line and "assetbus topics plan" in line
    assert not await described(infra, fresh.prefix)


async def test_a_static_member_restarted_keeps_its_partitions_without_a_rebalance_under_its_client_id(
        infra: Settings, topics: Topics) -> None:
    group = f"{topics.prefix}-persister"

    def member(host: str) -> ServiceShell[Sequence[Any]]:
        async def handle(records: Sequence[Any]) -> None:
            return None

        settings = ConsumerSettings(topics=(topics.emissions,), group_id=group, group_instance_id=f"persister-{host}",
                                    session_timeout_ms=30_000, heartbeat_interval_ms=1_000, leave_timeout_s=2.0)
        return ServiceShell(infra.kafka.for_service("persister", host=host), settings, handle)

    async def settled(*shells: ServiceShell[Sequence[Any]]) -> bool:
        owned = [s.consumer.assignment() if s.consumer else set() for s in shells]
        return all(owned) and sum(len(o) for o in owned) == 6

    leader, follower = member("node-a"), member("node-b")
    await leader.start()
    await leader.wait_assigned()
    await follower.start()
    try:
        await wait_for(lambda: settled(leader, follower), timeout_s=30, what="both members to share the partitions")
        assert leader.consumer is not None and follower.consumer is not None
        generation = leader.consumer._coordinator.generation
        before = follower.consumer.assignment()
        await follower.stop()  # a static member does not leave the group
        follower = member("node-b")
        await follower.start()
        await follower.wait_assigned()
        assert follower.consumer is not None
        assert follower.consumer.assignment() == before
        assert leader.consumer._coordinator.generation == generation  # the leader saw no rebalance

        admin = AIOKafkaAdminClient(**infra.kafka.client_kwargs())
        await admin.start()
        try:
            (response,) = await admin.describe_consumer_groups([group])
        finally:
            await admin.close()
        members = response.to_object()["groups"][0]["members"]
        assert {m["client_id"] for m in members} == {"assetbus-persister-node-a", "assetbus-persister-node-b"}
    finally:
        await follower.stop()
        await leader.stop()


async def test_a_scheduler_that_may_not_create_topics_names_a_synced_dags_missing_readiness_topic(
        infra: Settings, db_url: str, topics: Topics) -> None:
    from assetbus.consumers import scheduler as s
    from assetbus.consumers.storage import create_engine, register_asset

    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, "orders", "s3://bucket/orders/")
            dag = s.ConsumerDag(dag_id="orders_daily", schedule=s.AssetWait("orders"))
            await s.sync_dags(conn, s.LoadResult(root="/d.py", dags=[s.LoadedDag(dag, "/d.py")]))
    finally:
        await engine.dispose()
    config = s.SchedulerConfig(kafka=infra.kafka, database_url=db_url, topics=topics, create_topics=False,
                             startup_timeout_s=20)
    with pytest.raises(TopicsNotCreated) as caught:
        async with s.Scheduler(config):
            pass
    assert caught.value.missing == [topics.readiness("orders_daily")]
    assert f"--create --topic {topics.readiness('orders_daily')} --partitions 3" in str(caught.value)
    assert not [name for name in await described(infra, topics.prefix) if ".readiness." in name]


async def test_the_plan_of_the_synced_dags_lists_each_active_dags_readiness_topic(db_url: str,
                                                                                  topics: Topics) -> None:
    import json

    from assetbus.consumers import scheduler as s
    from assetbus.consumers.storage import create_engine, register_asset

    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, "orders", "s3://bucket/orders/")
            dags = [s.LoadedDag(s.ConsumerDag(dag_id=dag_id, schedule=s.AssetWait("orders")), "/d.py")
                    for dag_id in ("orders_daily", "orders_hourly")]
            await s.sync_dags(conn, s.LoadResult(root="/d.py", dags=dags))
    finally:
        await engine.dispose()
    code, out, err = await run_service({"DATABASE_URL": db_url, "ASSETBUS_TOPIC_PREFIX": topics.prefix},
                                       "topics", "plan", "--synced", "--dag", "extra")
    assert code == 0, err
    names = [topic["name"] for topic in json.loads(out)["topics"]]
    assert names[4:] == [topics.readiness(d) for d in ("extra", "orders_daily", "orders_hourly")]
