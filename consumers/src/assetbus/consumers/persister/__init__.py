"""The idempotent persister: commands in, one stored event per dedupe scope, receipts out."""

from assetbus.consumers.persister.app import Persister, serve
from assetbus.consumers.persister.batch import BatchProcessor, BatchResult, Outgoing
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.persister.metrics import PersisterMetrics

__all__ = ["BatchProcessor", "BatchResult", "Outgoing", "Persister", "PersisterConfig", "PersisterMetrics",
           "serve"]
