"""What the broker says: consumer-group lag, partitions and end offsets, and the cluster with some topics'
partition counts and settings, asked without joining a group or committing anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.topics import admin_client


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int
    """The group's next offset to read (its committed offset)."""
    end: int
    """The partition's end offset (the next offset to be written)."""

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


@dataclass(frozen=True, slots=True)
class GroupLag:
    """One consumer group's commits on the topics of interest, per partition."""

    group_id: str
    partitions: list[PartitionLag] = field(default_factory=list)

    @property
    def lag(self) -> int:
        """Records not yet committed by the group, over all its partitions."""
        return sum(p.lag for p in self.partitions)

    def by_topic(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for p in self.partitions:
            totals[p.topic] = totals.get(p.topic, 0) + p.lag
        return totals


async def consumer_group_lag(connection: KafkaConnection, *, topic_prefix: str,
                             groups: Iterable[str] | None = None, timeout_s: float = 10.0) -> list[GroupLag]:
    """The lag on topics named `<topic_prefix>.…` of `groups` (default: every group of the cluster, their commits
    fetched 16 at a time), by group id; groups without commits on such topics are left out."""
    async with asyncio.timeout(timeout_s):
        async with admin_client(connection, request_timeout_ms=int(timeout_s * 1000)) as admin:
            if groups is None:
                wanted = sorted({str(g[0]) for g in await admin.list_consumer_groups()})
            else:
                wanted = sorted(set(groups))
            slots = asyncio.Semaphore(16)

            async def commits_of(group_id: str) -> dict[TopicPartition, int]:
                async with slots:
                    offsets = await admin.list_consumer_group_offsets(group_id)
                return {tp: meta.offset for tp, meta in offsets.items()
                        if tp.topic.startswith(f"{topic_prefix}.") and meta.offset >= 0}

            found = await asyncio.gather(*(commits_of(group_id) for group_id in wanted))
            commits = {group_id: mine for group_id, mine in zip(wanted, found, strict=True) if mine}
        ends = await end_offsets(connection, {tp for mine in commits.values() for tp in mine})
    return [GroupLag(group_id, [PartitionLag(tp.topic, tp.partition, offset, ends.get(tp, offset))
                                for tp, offset in sorted(mine.items(), key=lambda kv: (kv[0].topic, kv[0].partition))])
            for group_id, mine in sorted(commits.items())]


async def end_offsets(connection: KafkaConnection, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """The end offset of each partition (a group-less consumer; nothing is read)."""
    wanted = list(partitions)
    if not wanted:
        return {}
    async with AIOKafkaConsumer(**connection.client_kwargs(), enable_auto_commit=False) as consumer:
        found = await consumer.end_offsets(wanted)
    return {tp: int(offset) for tp, offset in found.items()}


async def partitions_of(connection: KafkaConnection, topics: Iterable[str]) -> dict[str, list[int]]:
    """The partition ids of each topic that exists (absent topics are left out)."""
    wanted = sorted(set(topics))
    if not wanted:
        return {}
    async with admin_client(connection) as admin:
        described = await admin.describe_topics(wanted)
    return {str(t["topic"]): sorted(int(p["partition"]) for p in t["partitions"])
            for t in described if t["error_code"] == 0}


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """One topic as the broker describes it; `partitions` is None when the topic does not exist."""

    name: str
    partitions: int | None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    cluster_id: str | None
    brokers: list[str]
    topics: dict[str, TopicInfo]


async def describe_cluster(connection: KafkaConnection, topics: Sequence[str]) -> ClusterInfo:
    """The cluster id, its brokers, and the named topics with their partition counts and settings."""
    async with admin_client(connection, request_timeout_ms=15_000) as admin:
        cluster = await admin.describe_cluster()
        described = await admin.describe_topics(list(topics)) if topics else []
        counts = {t["topic"]: len(t["partitions"]) for t in described if t["error_code"] == 0}
        configs: dict[str, dict[str, str]] = {}
        if counts:
            responses = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name, None) for name in counts])
            for response in responses:
                for resource in response.to_object()["resources"]:
                    configs[resource["resource_name"]] = {e["config_names"]: e["config_value"]
                                                          for e in resource["config_entries"]}
    brokers = [f"{b['host']}:{b['port']} (id {b['node_id']})" for b in cluster["brokers"]]
    found = {name: TopicInfo(name, counts.get(name), configs.get(name, {})) for name in topics}
    return ClusterInfo(cluster.get("cluster_id"), brokers, found)
