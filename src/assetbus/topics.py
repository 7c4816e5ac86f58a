"""The core topics of a prefix, created explicitly (never by broker auto-creation): `assetbus migrate`, `infra up`.

Creation itself (replication factor, `min.insync.replicas`, the check of existing topics) is the
services' topic creator, `assetbus.consumers.kafka.topics.TopicCreator`.
"""

from __future__ import annotations

from assetbus.consumers.kafka.topics import TopicCreator, TopicReport, TopicSpec, delete_topics
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import Topics

__all__ = ["RETENTION_MS", "core_specs", "delete_topics", "ensure_topics"]

RETENTION_MS = {"receipts": 24 * 3600 * 1000}
"""Receipts are only useful while an emitter waits; everything else keeps the broker default."""


def core_specs(topics: Topics, extra: dict[str, int] | None = None, *,
               partitions: int | None = None) -> list[TopicSpec]:
    """The core topics (and `extra` ones) with their partitions; `partitions` overrides every default but the DLQ's."""
    wanted = {**topics.core(), **(extra or {})}
    specs = []
    for name, count in wanted.items():
        if partitions is not None and name != topics.emissions_dlq:
            count = partitions
        configs = {"retention.ms": str(RETENTION_MS["receipts"])} if name == topics.receipts else {}
        specs.append(TopicSpec(name, count, configs))
    return specs


async def ensure_topics(connection: KafkaConnection, topics: Topics, extra: dict[str, int] | None = None, *,
                        partitions: int | None = None, replication_factor: int | None = None,
                        min_insync_replicas: int | None = None) -> TopicReport:
    """Create the core topics (and `extra` ones) that are missing; report existing ones weaker than asked."""
    creator = TopicCreator(connection, replication_factor=replication_factor, min_insync_replicas=min_insync_replicas)
    return await creator.ensure(core_specs(topics, extra, partitions=partitions))
