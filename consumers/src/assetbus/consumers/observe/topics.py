"""What the broker says about the cluster and some topics: brokers, partition counts, settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.topics import admin_client


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
