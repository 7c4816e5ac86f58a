"""The emitter SDK: emit readiness from tasks, callbacks and notifiers, and get receipts back."""

from producers.assets import Asset
from producers.callbacks import AssetNotifier, run_references
from producers.context import EmissionContext, callback_context, current_context, forbid_emission, task_context
from producers.dispatch import DispatchConfig, Dispatcher
from producers.emitter import AsyncEmitter, source_of
from producers.errors import (
    AssetNotFound,
    BrokerUnavailable,
    EmissionRejected,
    EmitterClosed,
    EmitterError,
    ExtraTooLarge,
    InternalError,
    InvalidCommand,
    InvalidEmission,
    InvalidPartition,
    NoEmissionContext,
    ReceiptTimeout,
    Unauthorized,
    UnknownAsset,
    UnsupportedSchemaVersion,
    raise_for_rejection,
    rejection_error,
)
from producers.runtime import configure, shutdown
from producers.tokens import dag_token, issue_token, task_token

__all__ = [
    "Asset",
    "AssetNotFound",
    "AssetNotifier",
    "AsyncEmitter",
    "BrokerUnavailable",
    "DispatchConfig",
    "Dispatcher",
    "EmissionContext",
    "EmissionRejected",
    "EmitterClosed",
    "EmitterError",
    "ExtraTooLarge",
    "InternalError",
    "InvalidCommand",
    "InvalidEmission",
    "InvalidPartition",
    "NoEmissionContext",
    "ReceiptTimeout",
    "Unauthorized",
    "UnknownAsset",
    "UnsupportedSchemaVersion",
    "callback_context",
    "configure",
    "current_context",
    "dag_token",
    "forbid_emission",
    "issue_token",
    "raise_for_rejection",
    "rejection_error",
    "run_references",
    "shutdown",
    "source_of",
    "task_context",
    "task_token",
]
