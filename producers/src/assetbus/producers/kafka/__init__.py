"""The Kafka client toolkit shared by the SDK and the services: connection, and (see the modules) the
producer factory, batched sender, reply-topic reader and retry policy. The services add topic
administration and the consume → handle → commit shell in `assetbus.consumers.kafka`."""

from assetbus.producers.kafka.connection import (
    DEFAULT_BOOTSTRAP,
    ENV_PREFIX,
    KafkaConnection,
    SaslMechanism,
    SecurityProtocol,
)

__all__ = ["DEFAULT_BOOTSTRAP", "ENV_PREFIX", "KafkaConnection", "SaslMechanism", "SecurityProtocol"]
