"""The FastStream integration's wiring, on FastStream's in-memory TestKafkaBroker (no broker): typed signals,
each run once, the ack policy that commits only after the outcome is recorded."""

from __future__ import annotations

from faststream import AckPolicy
from faststream.kafka import KafkaBroker, TestKafkaBroker

from assetbus.producers.readiness import MemoryLedger, RunStatus
from assetbus.producers.readiness.faststream import subscribe_readiness
from assetbus.schemas import ReadinessSignal, Topics
from tests.unit.producers.readiness.test_subscriber_handling import signal

TOPICS = Topics(prefix="t")


async def test_each_run_is_handled_once_and_failures_are_recorded() -> None:
    seen: list[str] = []

    async def handle(s: ReadinessSignal) -> None:
        seen.append(s.run_id)
        if s.run_id == "bad":
            raise ValueError("boom")

    broker = KafkaBroker()
    ledger = MemoryLedger()
    subscribe_readiness(broker, "daily", handle, group_id="g", ledger=ledger, topics=TOPICS)
    async with TestKafkaBroker(broker) as test_broker:
        for value in (signal("good"), signal("good"), signal("bad"), b"not json", signal("x", dag_id="weekly")):
            await test_broker.publish(value, TOPICS.readiness("daily"))
    assert seen == ["good", "bad"]
    assert ledger.outcomes == {"good": RunStatus.SUCCESS, "bad": RunStatus.FAILED}


def test_the_subscriber_never_acks_before_the_handler() -> None:
    async def handle(s: ReadinessSignal) -> None:
        return None

    broker = KafkaBroker()
    subscriber = subscribe_readiness(broker, "daily", handle, group_id="g", ledger=MemoryLedger(), topics=TOPICS)
    assert subscriber.ack_policy is AckPolicy.NACK_ON_ERROR
    assert list(subscriber.topic_names) == [TOPICS.readiness("daily")]
