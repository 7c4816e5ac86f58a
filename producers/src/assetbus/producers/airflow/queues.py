"""assetbus as a message queue of Airflow's common-messaging provider (docs/airflow.md, "Event-driven
scheduling"): `MessageQueueTrigger(scheme="assetbus", dag_id=...)`, or the deprecated queue-URI form
`queue="assetbus://readiness/<dag_id>"` (parsed by `queue_uri`), serializes as `AssetbusReadinessTrigger`.
Airflow finds this class through the provider info's `queues`.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.messaging.providers.base_provider import BaseMessageQueueProvider
from airflow.triggers.base import BaseEventTrigger

from assetbus.producers.airflow.queue_uri import SCHEME, ReadinessQueue, is_assetbus_queue
from assetbus.producers.airflow.triggers import AssetbusReadinessTrigger


class AssetbusMessageQueueProvider(BaseMessageQueueProvider):  # type: ignore[misc]
    """`MessageQueueTrigger(scheme="assetbus", dag_id=...)` or `(queue="assetbus://readiness/<dag_id>")`:
    the readiness signals of an assetbus consumer DAG, as `AssetbusReadinessTrigger` reads them."""

    scheme = SCHEME

    def queue_matches(self, queue: str) -> bool:
        return is_assetbus_queue(queue)

    def trigger_class(self) -> type[BaseEventTrigger]:
        return AssetbusReadinessTrigger

    def trigger_kwargs(self, queue: str, **kwargs: Any) -> dict[str, Any]:
        return ReadinessQueue.parse(queue).trigger_kwargs(**kwargs)
