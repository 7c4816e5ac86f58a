"""The emitter SDK: emit readiness from tasks, callbacks and notifiers, and get receipts back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.producers.assets import Asset
    from assetbus.producers.callbacks import AssetNotifier, run_references
    from assetbus.producers.context import (
        EmissionContext,
        callback_context,
        current_context,
        forbid_emission,
        task_context,
    )
    from assetbus.producers.dispatch import DispatchConfig, Dispatcher
    from assetbus.producers.emitter import AsyncEmitter
    from assetbus.producers.errors import (
        AssetNotDeclared,
        AssetNotFound,
        AttemptEnded,
        BrokerUnavailable,
        EmissionRejected,
        EmitterClosed,
        EmitterError,
        ExtraTooLarge,
        InsufficientScope,
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
    from assetbus.producers.runtime import configure, shutdown
    from assetbus.producers.signing import SigningKey
    from assetbus.producers.tokens import dag_token, issue_token, refresh_token, source_of, task_token
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = ["Asset", "AssetNotDeclared", "AssetNotFound", "AssetNotifier", "AsyncEmitter", "AttemptEnded",
           "BrokerUnavailable", "DispatchConfig", "Dispatcher", "EmissionContext", "EmissionRejected", "EmitterClosed",
           "EmitterError", "ExtraTooLarge", "InsufficientScope", "InternalError", "InvalidCommand", "InvalidEmission",
           "InvalidPartition", "NoEmissionContext", "ReceiptTimeout", "SigningKey", "Unauthorized", "UnknownAsset",
           "UnsupportedSchemaVersion", "callback_context", "configure", "current_context", "dag_token",
           "forbid_emission", "issue_token", "raise_for_rejection", "refresh_token", "rejection_error",
           "run_references", "shutdown", "source_of", "task_context", "task_token"]
