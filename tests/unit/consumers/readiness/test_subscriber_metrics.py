"""The server's Prometheus adapter of the SDK subscriber's events: outcomes, handler time, latency per DAG."""

from __future__ import annotations

from assetbus.consumers.readiness import MemoryLedger, ReadinessSubscriber, SubscriberMetrics
from assetbus.schemas import ReadinessSignal
from tests.unit.producers.readiness.test_subscriber_handling import signal


async def test_outcomes_handler_time_and_latency_are_counted_per_dag() -> None:
    async def handle(s: ReadinessSignal) -> None:
        if s.run_id == "bad":
            raise ValueError("boom")

    subscriber = ReadinessSubscriber("127.0.0.1:1", "daily", handle, group_id="g", ledger=MemoryLedger(),
                                     metrics=SubscriberMetrics())
    assert isinstance(subscriber.metrics, SubscriberMetrics)
    for value in (signal("good"), signal("good"), signal("bad"), b"not json"):
        await subscriber.handle(value)
    registry = subscriber.metrics.registry

    def signals(outcome: str) -> float | None:
        return registry.get_sample_value("assetbus_subscriber_signals_total", {"dag_id": "daily", "outcome": outcome})

    assert [signals(o) for o in ("success", "duplicate", "failed", "unreadable")] == [1, 1, 1, 1]
    assert registry.get_sample_value("assetbus_subscriber_handler_seconds_count", {"dag_id": "daily"}) == 2
    latency = registry.get_sample_value("assetbus_subscriber_readiness_latency_seconds_sum", {"dag_id": "daily"})
    assert latency is not None and latency > 0  # the signals were created in 2026-10 (NOW), long before
