"""The services: persister (and, later, scheduler and execution API), the storage layer."""

from assetbus.consumers.errors import ConsumerError, StorageUnavailable

__all__ = ["ConsumerError", "StorageUnavailable"]
