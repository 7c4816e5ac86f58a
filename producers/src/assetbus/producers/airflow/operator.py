"""`AssetbusEmitOperator`: emit an asset from a DAG built of classic operators (docs/airflow.md, "The operator").

    AssetbusEmitOperator(task_id="announce", asset=orders, partition_key="{{ ds }}", dedupe_key="{{ ds }}")
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, cast

from airflow.sdk import BaseOperator

from assetbus.producers.airflow.attempt import asset_ref
from assetbus.producers.airflow.emit import emit
from assetbus.producers.assets import Asset as Handle
from assetbus.producers.options import EMIT_FIELDS, SEND_FIELDS, SendOptions


class AssetbusEmitOperator(BaseOperator):  # type: ignore[misc]
    """Emit one asset event when the task runs, and wait for its receipt."""

    template_fields: Sequence[str] = ("asset_name", "asset_uri", *sorted(EMIT_FIELDS))
    template_fields_renderers: ClassVar[dict[str, str]] = {"extra": "json"}
    ui_color = "#d9ecf2"

    def __init__(self, *, asset: object | None = None, asset_name: str | None = None, asset_uri: str | None = None,
                 assetbus_conn_id: str | None = None, raise_on_reject: bool = True, **kwargs: Any) -> None:
        options = {name: kwargs.pop(name) for name in SEND_FIELDS if name in kwargs}
        ref = asset_ref(asset) if asset is not None else None
        if asset is not None and ref is None:
            raise ValueError(f"{type(asset).__name__} has no name and URI (only Assets can be emitted)")
        if ref is not None and "outlets" not in kwargs:
            kwargs["outlets"] = [asset]
        super().__init__(**kwargs)
        self.asset_name = asset_name or (ref.name if ref else None)
        self.asset_uri = asset_uri or (ref.uri if ref else None)
        if not self.asset_name or not self.asset_uri:
            raise ValueError(f"{self.task_id}: give `asset`, or both `asset_name` and `asset_uri`")
        self.assetbus_conn_id = assetbus_conn_id
        self.raise_on_reject = raise_on_reject
        for name in SEND_FIELDS:
            setattr(self, name, options.get(name))

    def options(self) -> SendOptions:
        """The rendered options that are set (`partition_date` parsed when it rendered to a string)."""
        values = {name: getattr(self, name) for name in SEND_FIELDS if getattr(self, name) is not None}
        if isinstance(values.get("partition_date"), str):
            values["partition_date"] = datetime.fromisoformat(values["partition_date"].replace("Z", "+00:00"))
        return cast(SendOptions, values)

    def execute(self, context: Any) -> dict[str, Any]:
        receipt = emit(Handle(str(self.asset_name), str(self.asset_uri)), context=context,
                       conn_id=self.assetbus_conn_id, raise_on_reject=self.raise_on_reject, **self.options())
        self.log.info("emitted %s: %s, event %s at %s", self.asset_name, receipt.status.value, receipt.event_id,
                      receipt.timestamp)
        return receipt.model_dump(mode="json", exclude_none=True)
