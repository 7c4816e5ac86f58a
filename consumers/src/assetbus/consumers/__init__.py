"""The services: persister, scheduler, execution API, Airflow bridge and forwarder, and the storage layer
(the only code that writes SQL). They consume through the SDK's Kafka toolkit (`assetbus.producers.kafka`),
never a loop of their own."""

from assetbus.consumers.errors import ConsumerError, StorageUnavailable

__all__ = ["ConsumerError", "StorageUnavailable"]
