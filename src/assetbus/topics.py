"""The core topics of a prefix, created explicitly (never by broker auto-creation): `assetbus migrate`, `infra up`.

Creation itself (replication factor, `min.insync.replicas`, the check of existing topics) is the
services' topic creator, `assetbus.producers.kafka.topics.TopicCreator`.
"""

from __future__ import annotations

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.topics import (
    RETENTION_MS,
    TopicCreator,
    TopicReport,
    core_specs,
    delete_topics,
)
from assetbus.schemas import Topics

__all__ = ["RETENTION_MS", "core_specs", "delete_topics", "ensure_topics"]


async def ensure_topics(connection: KafkaConnection, topics: Topics, extra: dict[str, int] | None = None, *,
                        partitions: int | None = None, replication_factor: int | None = None,
                        min_insync_replicas: int | None = None, create: bool = True) -> TopicReport:
    """Create the core topics (and `extra` ones) that are missing; report existing ones weaker than asked.
    With `create=False` a missing one raises `TopicsNotCreated` instead."""
    creator = TopicCreator(connection, replication_factor=replication_factor, min_insync_replicas=min_insync_replicas,
                           create=create)
    return await creator.ensure(core_specs(topics, extra, partitions=partitions))
