"""The idempotent persister: commands in, one stored event per dedupe scope, receipts out."""

from consumers.persister.app import Persister, create_app
from consumers.persister.batch import BatchProcessor, BatchResult
from consumers.persister.config import PersisterConfig

__all__ = ["BatchProcessor", "BatchResult", "Persister", "PersisterConfig", "create_app"]
