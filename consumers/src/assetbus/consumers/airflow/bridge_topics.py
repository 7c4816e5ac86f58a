"""The readiness topics of the DAGs the Airflow bridge serves.

The bridge never creates a core topic: its start-up (the service template's `wait_for`) requires
`<prefix>.asset-events`, so a bridge on an install that was not migrated, or on a mistyped prefix, stops
with one line naming it rather than create readiness topics under a prefix nobody publishes to and serve
nothing. (That one core topic is the one its ACLs let it describe: `assetbus topics plan`.) A readiness
topic is created with the scheduler's partition count (`readiness_partitions`), unless
ASSETBUS_CREATE_TOPICS=false: then a DAG is served from the first sync that finds its topic, and until
then a warning names the topic it waits for.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.topics import TopicCreator, TopicsNotCreated
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.airflow.bridge")

class BridgeReadinessTopics:
    """The readiness topics of the DAGs the bridge starts serving: created (`create`), or waited for."""

    def __init__(self, connection: KafkaConnection, topics: Topics, *, create: bool, partitions: int) -> None:
        self._creator = TopicCreator(connection, create=create)
        self._topics = topics
        self._partitions = partitions
        self._waiting: set[str] = set()

    async def ensure(self, dag_ids: Sequence[str]) -> None:
        """Create the missing readiness topics of `dag_ids` (TopicsNotCreated names them if it may not)."""
        await create_readiness_topics(self._creator, self._topics, dag_ids, partitions=self._partitions)

    async def available(self, dag_ids: Sequence[str]) -> list[str]:
        """Those of `dag_ids` whose readiness topic exists now (created here first, if this bridge may)."""
        try:
            await self.ensure(dag_ids)
            missing: set[str] = set()
        except TopicsNotCreated as error:
            missing = set(error.missing)
        if missing - self._waiting:
            log.warning("waiting for the readiness topic(s) %s before serving their DAGs: ASSETBUS_CREATE_TOPICS="
                        "false, so the bridge creates none (the assetbus scheduler creates them once it has the "
                        "consumer DAG, or create them as `assetbus topics plan` lists)", ", ".join(sorted(missing)))
        self._waiting = missing
        return [dag_id for dag_id in dag_ids if self._topics.readiness(dag_id) not in missing]
