"""The idempotent persister: commands in, one stored event per dedupe scope, receipts out."""

from consumers.persister.app import Persister, create_app
from consumers.persister.batch import BatchProcessor, BatchResult, Outgoing
from consumers.persister.config import PersisterConfig
from consumers.persister.metrics import PersisterMetrics

__all__ = ["BatchProcessor", "BatchResult", "Outgoing", "Persister", "PersisterConfig", "PersisterMetrics",
           "create_app"]
