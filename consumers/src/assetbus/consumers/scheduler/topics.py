"""Readiness topics (`<prefix>.readiness.<dag_id>`), created through the toolkit's topic creator."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from assetbus.consumers.scheduler.config import READINESS_PARTITIONS
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.topics import TopicCreator, TopicSpec
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.scheduler")


async def create_readiness_topics(connection: KafkaConnection | TopicCreator, topics: Topics, dag_ids: Iterable[str],
                                  *, partitions: int = READINESS_PARTITIONS) -> list[str]:
    """Create the readiness topics of these DAGs that are missing. Returns the names it created."""
    wanted = sorted({topics.readiness(dag_id) for dag_id in dag_ids})
    if not wanted:
        return []
    creator = connection if isinstance(connection, TopicCreator) else TopicCreator(connection)
    report = await creator.ensure((TopicSpec(name, partitions) for name in wanted), check_existing=False)
    if report.created:
        log.info("created readiness topics: %s", ", ".join(report.created))
    return report.created


class ReadinessTopics:
    """Remembers which readiness topics exist, so only a DAG seen for the first time costs a round trip."""

    def __init__(self, creator: KafkaConnection | TopicCreator, topics: Topics,
                 partitions: int = READINESS_PARTITIONS) -> None:
        self._creator = creator if isinstance(creator, TopicCreator) else TopicCreator(creator)
        self._topics = topics
        self._partitions = partitions
        self._known: set[str] = set()

    async def ensure(self, dag_ids: Iterable[str]) -> None:
        unknown = {dag_id for dag_id in dag_ids if dag_id not in self._known}
        if unknown:
            await create_readiness_topics(self._creator, self._topics, unknown, partitions=self._partitions)
            self._known |= unknown
