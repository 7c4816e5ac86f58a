"""The emitter SDK: emit readiness from tasks, callbacks and notifiers, and get receipts back."""

from producers.emitter import AsyncEmitter, source_of
from producers.errors import EmissionRejected, EmitterError, ReceiptTimeout
from producers.tokens import dag_token, issue_token, task_token
from producers.validation import InvalidEmission

__all__ = [
    "AsyncEmitter",
    "EmissionRejected",
    "EmitterError",
    "InvalidEmission",
    "ReceiptTimeout",
    "dag_token",
    "issue_token",
    "source_of",
    "task_token",
]
