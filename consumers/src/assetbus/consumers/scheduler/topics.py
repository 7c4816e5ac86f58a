"""Explicit creation of readiness topics (`<prefix>.readiness.<dag_id>`): the broker never auto-creates."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from assetbus.schemas import Topics

log = logging.getLogger("assetbus.scheduler")

READINESS_PARTITIONS = 3
"""Partitions of a readiness topic: signals of one target partition key stay in order on one of them."""


async def create_readiness_topics(bootstrap_servers: str, topics: Topics, dag_ids: Iterable[str], *,
                                  partitions: int = READINESS_PARTITIONS) -> list[str]:
    """Create the readiness topics of these DAGs that are missing. Returns the names it created."""
    wanted = sorted({topics.readiness(dag_id) for dag_id in dag_ids})
    if not wanted:
        return []
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=15000)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [name for name in wanted if name not in existing]
        if missing:
            try:
                await admin.create_topics([NewTopic(name, partitions, 1) for name in missing])
            except TopicAlreadyExistsError:
                pass
            log.info("created readiness topics: %s", ", ".join(missing))
        return missing
    finally:
        await admin.close()


class ReadinessTopics:
    """Remembers which readiness topics exist, so only a DAG seen for the first time costs a round trip."""

    def __init__(self, bootstrap_servers: str, topics: Topics, partitions: int = READINESS_PARTITIONS) -> None:
        self._bootstrap = bootstrap_servers
        self._topics = topics
        self._partitions = partitions
        self._known: set[str] = set()

    async def ensure(self, dag_ids: Iterable[str]) -> None:
        unknown = {dag_id for dag_id in dag_ids if dag_id not in self._known}
        if unknown:
            await create_readiness_topics(self._bootstrap, self._topics, unknown, partitions=self._partitions)
            self._known |= unknown
