"""The one Kafka toolkit, shared by the SDK and the services: connection, producer factory, batched sender,
reply-topic reader, retry policy, topic creation and the one "listed with a leader" check, the consume →
handle → commit shell with its offsets, access errors and start-up waits. The services consume through it
and never run a loop of their own (docs/decisions/0001-one-kafka-toolkit.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.producers.kafka.access import (
        EXIT_ACCESS_DENIED,
        AccessRefusals,
        KafkaAccessDenied,
        access_denied,
        naming_refusals,
    )
    from assetbus.producers.kafka.connection import (
        DEFAULT_BOOTSTRAP,
        ENV_PREFIX,
        KafkaConnection,
        OAuthProvider,
        SaslMechanism,
        SecurityProtocol,
        as_connection,
    )
    from assetbus.producers.kafka.errors import KafkaToolkitError, TopicMissing
    from assetbus.producers.kafka.oauth import (
        ClientCredentialsTokenProvider,
        MskIamTokenProvider,
        OAuthCredentialsRefused,
        OAuthError,
        OAuthTokenUnavailable,
    )
    from assetbus.producers.kafka.offsets import OffsetCounters, OffsetMetrics, Offsets, Tallies, batch_ranges
    from assetbus.producers.kafka.periodic import cancel_and_wait, every
    from assetbus.producers.kafka.producer import create_producer, started
    from assetbus.producers.kafka.replies import ReplyReader
    from assetbus.producers.kafka.retry import Backoff, RetryPolicy, RetryTimeout, retry_until
    from assetbus.producers.kafka.sender import BatchSender, Delivery, partition_for, wait_all
    from assetbus.producers.kafka.shell import ServiceShell
    from assetbus.producers.kafka.startup import EXIT_STARTUP_TIMEOUT, StartupTimeout, startup_policy, wait_for_kafka
    from assetbus.producers.kafka.topics import (
        EXIT_TOPICS_NOT_CREATED,
        TopicCreationFailed,
        TopicCreator,
        TopicReport,
        TopicsNotCreated,
        TopicsNotListed,
        TopicSpec,
        WeakerTopic,
        core_specs,
        default_replication,
        delete_topics,
        wait_listed,
    )
    from assetbus.producers.kafka.types import BatchHandler, ConsumedRecord, ConsumerSettings, KeyedRecord
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = ["DEFAULT_BOOTSTRAP", "ENV_PREFIX", "EXIT_ACCESS_DENIED", "EXIT_STARTUP_TIMEOUT", "EXIT_TOPICS_NOT_CREATED",
           "AccessRefusals", "Backoff", "BatchHandler", "BatchSender", "ClientCredentialsTokenProvider",
           "ConsumedRecord", "ConsumerSettings", "Delivery", "KafkaAccessDenied", "KafkaConnection",
           "KafkaToolkitError", "KeyedRecord", "MskIamTokenProvider", "OAuthCredentialsRefused", "OAuthError",
           "OAuthProvider", "OAuthTokenUnavailable", "OffsetCounters", "OffsetMetrics", "Offsets", "ReplyReader",
           "RetryPolicy", "RetryTimeout", "SaslMechanism", "SecurityProtocol", "ServiceShell", "StartupTimeout",
           "Tallies", "TopicCreationFailed", "TopicCreator", "TopicMissing", "TopicReport", "TopicSpec",
           "TopicsNotCreated", "TopicsNotListed", "WeakerTopic", "access_denied", "as_connection", "batch_ranges",
           "cancel_and_wait", "core_specs", "create_producer", "default_replication", "delete_topics", "every",
           "naming_refusals", "partition_for", "retry_until", "started", "startup_policy", "wait_all",
           "wait_for_kafka", "wait_listed"]
