"""The services' half of the Kafka toolkit: topic creation, the consume → handle → commit shell, start-up waits.

The half shared with the task-side SDK (connection, producer factory, batched sender, reply-topic
reader, retry policy) is `assetbus.producers.kafka`.
"""

from assetbus.consumers.kafka.offsets import OffsetMetrics, Offsets, Tallies, batch_ranges
from assetbus.consumers.kafka.shell import BatchHandler, ConsumerSettings, ServiceShell
from assetbus.consumers.kafka.startup import (
    EXIT_STARTUP_TIMEOUT,
    StartupTimeout,
    startup_policy,
    wait_for_database,
    wait_for_kafka,
)
from assetbus.consumers.kafka.topics import (
    TopicCreationFailed,
    TopicCreator,
    TopicReport,
    TopicsNotCreated,
    TopicSpec,
    WeakerTopic,
    core_specs,
    default_replication,
    delete_topics,
)

__all__ = ["EXIT_STARTUP_TIMEOUT", "BatchHandler", "ConsumerSettings", "OffsetMetrics", "Offsets", "ServiceShell",
           "StartupTimeout", "Tallies", "TopicCreationFailed", "TopicCreator", "TopicReport", "TopicSpec",
           "TopicsNotCreated", "WeakerTopic", "batch_ranges", "core_specs", "default_replication", "delete_topics",
           "startup_policy", "wait_for_database", "wait_for_kafka"]
