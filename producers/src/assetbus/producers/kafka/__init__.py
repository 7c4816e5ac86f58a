"""The Kafka client toolkit shared by the SDK and the services: connection, and (see the modules) the
producer factory, batched sender, reply-topic reader, retry policy and background task. The services add topic
administration and the consume → handle → commit shell in `assetbus.consumers.kafka`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.producers.kafka.background import in_background
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
    from assetbus.producers.kafka.producer import create_producer
    from assetbus.producers.kafka.replies import ReplyReader
    from assetbus.producers.kafka.retry import Backoff, RetryPolicy, RetryTimeout, retry_until
    from assetbus.producers.kafka.sender import BatchSender, Delivery, partition_for, wait_all
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__, {
        ".background": ("in_background",),
        ".connection": (
            "DEFAULT_BOOTSTRAP", "ENV_PREFIX", "KafkaConnection", "OAuthProvider", "SaslMechanism", "SecurityProtocol",
            "as_connection",
        ),
        ".oauth": ("ClientCredentialsTokenProvider", "MskIamTokenProvider", "OAuthCredentialsRefused", "OAuthError",
                   "OAuthTokenUnavailable"),
        ".errors": ("KafkaToolkitError", "TopicMissing"),
        ".producer": ("create_producer",),
        ".replies": ("ReplyReader",),
        ".retry": ("Backoff", "RetryPolicy", "RetryTimeout", "retry_until"),
        ".sender": ("BatchSender", "Delivery", "partition_for", "wait_all"),
    })

__all__ = ["DEFAULT_BOOTSTRAP", "ENV_PREFIX", "Backoff", "BatchSender", "ClientCredentialsTokenProvider", "Delivery",
           "KafkaConnection", "KafkaToolkitError", "MskIamTokenProvider", "OAuthCredentialsRefused", "OAuthError",
           "OAuthProvider", "OAuthTokenUnavailable", "ReplyReader", "RetryPolicy", "RetryTimeout", "SaslMechanism",
           "SecurityProtocol", "TopicMissing", "as_connection", "create_producer", "in_background", "partition_for",
           "retry_until", "wait_all"]
