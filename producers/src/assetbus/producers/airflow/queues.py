"""assetbus as a message queue of Airflow's common-messaging provider: `MessageQueueTrigger` for AssetWatchers.

    from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger

    ready = Asset("orders_ready", watchers=[AssetWatcher(name="orders_ready", trigger=MessageQueueTrigger(
        scheme="assetbus", dag_id="orders_by_partition", conn_id="assetbus_triggerer"))])

`scheme="assetbus"` passes the other keyword arguments to `AssetbusReadinessTrigger` (dag_id, conn_id,
group_id). The older queue-URI form, deprecated by common-messaging, works too:
`MessageQueueTrigger(queue="assetbus://readiness/orders_by_partition?conn_id=assetbus_triggerer")` (the URI
is parsed by assetbus.producers.airflow.queue_uri; a wrong one fails when the DAG file is parsed). Either way
the serialized trigger, what the triggerer runs, is `AssetbusReadinessTrigger` itself.

Airflow finds this class through the provider info's `queues` (assetbus.producers.airflow.provider); it needs
`apache-airflow-providers-common-messaging` (in the `airflow` extra of assetbus-sdk).
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
