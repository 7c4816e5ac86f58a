"""The idempotent persister: commands in, one stored event per dedupe scope, receipts out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.persister.app import Persister
    from assetbus.consumers.persister.batch import Outgoing
    from assetbus.consumers.persister.config import PersisterConfig
    from assetbus.consumers.persister.metrics import PersisterMetrics
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = ["Outgoing", "Persister", "PersisterConfig", "PersisterMetrics"]
