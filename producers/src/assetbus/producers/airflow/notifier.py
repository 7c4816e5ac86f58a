"""`AssetbusNotifier`: an Airflow notifier that emits an asset from task- or DAG-level callbacks, as the task
attempt or as the DAG run (docs/airflow.md, "Notifiers and callbacks"); `extra` gets `{"run": references}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseNotifier

from assetbus.producers.airflow.emit import emit
from assetbus.producers.callbacks import run_references
from assetbus.schemas import Receipt


class AssetbusNotifier(BaseNotifier):  # type: ignore[misc]
    """Emit `asset` (an Airflow Asset) when the callback fires; the receipt is kept in `last_receipt`."""

    template_fields = ("extra", "dedupe_key")

    def __init__(self, asset: object, *, extra: Mapping[str, Any] | None = None,
                 dedupe_key: str | None = None, assetbus_conn_id: str | None = None) -> None:
        super().__init__()
        self.asset = asset
        self.assetbus_conn_id = assetbus_conn_id
        self.extra = dict(extra or {})
        self.dedupe_key = dedupe_key
        self.last_receipt: Receipt | None = None

    def notify(self, context: Mapping[str, Any]) -> None:
        self.last_receipt = emit(self.asset, extra={**self.extra, "run": run_references(context)},
                                 dedupe_key=self.dedupe_key, context=context,
                                 conn_id=self.assetbus_conn_id)
