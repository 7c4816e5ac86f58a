"""Readiness on a FastStream `KafkaBroker` (FastStream 0.6 or newer; `pip install 'assetbus-sdk[faststream]'`; the
guide: docs/consumer-dags.md). A ledger error nacks (the signal comes again); a handler's exception is the run's
`failed` outcome and acks. FastStream handles one message at a time per subscriber, so its ack never commits past
a signal still being handled.
"""

from __future__ import annotations

import logging
from typing import Any

from faststream import AckPolicy
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from assetbus.producers.readiness.leases import Leases
from assetbus.producers.readiness.ledger import RunLedger
from assetbus.producers.readiness.subscriber import Handler, SubscriberEvents, check_signal, run_once
from assetbus.producers.tracing import context_of
from assetbus.schemas import Topics

log = logging.getLogger("assetbus.readiness")

__all__ = ["subscribe_readiness"]


def subscribe_readiness(broker: KafkaBroker, dag_id: str, handler: Handler, *, group_id: str, ledger: RunLedger,
                        topics: Topics | None = None, consumer_name: str | None = None,
                        metrics: SubscriberEvents | None = None) -> Any:
    """Register `handler` for the readiness signals of `dag_id` on `broker`, each run handled once.

    Returns FastStream's subscriber object. An `ApiLedger` opens its HTTP client on first use; close
    it with `await ledger.stop()` when the app ends (an `on_shutdown` hook of the FastStream app).
    """
    topic = (topics or Topics()).readiness(dag_id)
    consumer = consumer_name or group_id
    events = metrics or SubscriberEvents()
    leases = Leases(ledger)  # its renewal task ends a turn after the last handler

    async def on_signal(body: Any, message: KafkaMessage) -> None:
        signal = check_signal(message.body, dag_id, topic)
        if signal is None:
            events.signal(dag_id, "unreadable")
            return
        outcome = await run_once(ledger, signal, handler, consumer, events,
                                 context_of(getattr(message.raw_message, "headers", None)), leases=leases)
        events.signal(dag_id, outcome.value)

    on_signal.__name__ = f"readiness_{dag_id}"
    subscriber = broker.subscriber(topic, group_id=group_id, ack_policy=AckPolicy.NACK_ON_ERROR,
                                   auto_offset_reset="earliest")
    subscriber(on_signal)
    return subscriber
