"""`AssetbusPartitionSensor`: wait, deferred to `AssetbusPartitionTrigger`, until assetbus has stored partition X
of asset Y (docs/airflow.md, "Event-driven scheduling").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator

from assetbus.producers.airflow.attempt import asset_ref
from assetbus.producers.airflow.triggers import AssetbusPartitionTrigger
from assetbus.producers.errors import InvalidEmission


class AssetbusPartitionSensor(BaseSensorOperator):  # type: ignore[misc]
    """Succeed once assetbus has stored an event of `asset` (an Airflow Asset) for `partition_key`."""

    template_fields = ("partition_key",)

    def __init__(self, *, asset: object, partition_key: str | None = None, assetbus_conn_id: str | None = None,
                 timeout: float | timedelta = timedelta(days=1), **kwargs: Any) -> None:
        ref = asset_ref(asset)
        if ref is None:
            raise InvalidEmission("asset", f"{type(asset).__name__} has no name and URI")
        kwargs.setdefault("inlets", [asset])
        super().__init__(timeout=timeout, **kwargs)
        self.asset_name = ref.name
        self.partition_key = partition_key
        self.assetbus_conn_id = assetbus_conn_id

    def execute(self, context: Mapping[str, Any]) -> None:
        self.defer(trigger=AssetbusPartitionTrigger(self.asset_name, partition_key=self.partition_key,
                                                    conn_id=self.assetbus_conn_id),
                   method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def execute_complete(self, context: Mapping[str, Any], event: Mapping[str, Any]) -> dict[str, Any]:
        """The stored event that satisfied the sensor (its XCom `return_value`)."""
        return dict(event)
