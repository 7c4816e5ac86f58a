"""`AssetbusNotifier`: an Airflow notifier that emits an asset from task- or DAG-level callbacks.

```python
dag = DAG(..., on_failure_callback=AssetbusNotifier(incidents, extra={"team": "ingest"}))
```

A task-level callback emits as the task attempt; a DAG-level one as the DAG run, so its event
keeps the DAG and run and leaves the task fields null. `extra` gets `{"run": references}` (ids,
states, the exception's first line, the log URL) from Airflow's callback context.
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
