"""The topics of the Airflow bridge: its prefix's asset-events topic, checked at start-up, and each DAG's readiness
topic.

The bridge never creates a core topic. If `<prefix>.asset-events` is missing, the install is not migrated or
the topic prefix is mistyped: the bridge refuses to start with one line naming it (`TopicPrefixUnknown`),
rather than create readiness topics under a prefix nobody publishes to and serve nothing. (It checks that one
core topic, which its ACLs let it describe: `assetbus topics plan`.) A readiness topic is created with the
scheduler's partition count (`readiness_partitions`), unless ASSETBUS_CREATE_TOPICS=false: then a DAG is
served from the first sync that finds its topic, and until then a warning names the topic it waits for.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from assetbus.consumers.errors import ConsumerError
from assetbus.consumers.kafka.topics import TopicCreator, TopicsNotCreated, core_specs
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.airflow.bridge")

EXIT_NOT_MIGRATED = 6
"""The exit code of `assetbus` commands that find the schema or the topics missing (docs/cli.md)."""


class TopicPrefixUnknown(ConsumerError):
    """The bridge's prefix has no asset-events topic: not migrated, or a mistyped ASSETBUS_TOPIC_PREFIX."""

    exit_code = EXIT_NOT_MIGRATED

    def __init__(self, prefix: str, missing: Sequence[str], where: str) -> None:
        super().__init__(f"no assetbus topics with the prefix {prefix!r} on {where} ({', '.join(missing)} missing): "
                         f"run `assetbus migrate`, or check ASSETBUS_TOPIC_PREFIX")
        self.prefix = prefix
        self.missing = list(missing)


async def require_core_topics(connection: KafkaConnection, topics: Topics) -> None:
    """Return if the prefix's asset-events topic exists; `TopicPrefixUnknown` naming it otherwise."""
    wanted = [spec for spec in core_specs(topics) if spec.name == topics.asset_events]
    try:
        await TopicCreator(connection, create=False).ensure(wanted, check_existing=False)
    except TopicsNotCreated as error:
        raise TopicPrefixUnknown(topics.prefix, error.missing, connection.describe()) from error


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
