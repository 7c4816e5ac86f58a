"""The subscriber's per-signal logic without a broker: dedupe by run id, outcomes, bad input."""

from __future__ import annotations

from datetime import UTC, datetime

from assetbus.producers.readiness import MemoryLedger, ReadinessSubscriber, RunStatus
from assetbus.schemas import Provenance, ReadinessSignal, SourceKind, TriggeringEvent

NOW = datetime(2026, 10, 1, tzinfo=UTC)
SOURCE = Provenance(kind=SourceKind.DAG, dag_id="ingest", run_id="r1")


def signal(run_id: str = "run-1", dag_id: str = "daily") -> bytes:
    event = TriggeringEvent(event_id=1, asset_name="orders", source=SOURCE, timestamp=NOW)
    return ReadinessSignal(run_id=run_id, dag_id=dag_id, partition_key="2026-10-01", generation=1, events=[event],
                           created_at=NOW).model_dump_json().encode()


async def test_a_repeated_signal_runs_the_handler_once() -> None:
    seen: list[str] = []

    async def handle(s: ReadinessSignal) -> None:
        seen.append(s.run_id)

    ledger = MemoryLedger()
    subscriber = ReadinessSubscriber("127.0.0.1:1", "daily", handle, group_id="g", ledger=ledger)
    assert await subscriber.handle(signal()) is RunStatus.SUCCESS
    assert await subscriber.handle(signal()) is None
    assert seen == ["run-1"]
    assert (subscriber.stats.processed, subscriber.stats.duplicates) == (1, 1)
    assert ledger.outcomes == {"run-1": RunStatus.SUCCESS}


async def test_a_handler_that_raises_marks_the_run_failed_and_does_not_stop_the_subscriber() -> None:
    async def handle(s: ReadinessSignal) -> None:
        if s.run_id == "bad":
            raise ValueError("boom")

    ledger = MemoryLedger()
    subscriber = ReadinessSubscriber("127.0.0.1:1", "daily", handle, group_id="g", ledger=ledger)
    assert await subscriber.handle(signal("bad")) is RunStatus.FAILED
    assert await subscriber.handle(signal("good")) is RunStatus.SUCCESS
    assert ledger.outcomes == {"bad": RunStatus.FAILED, "good": RunStatus.SUCCESS}


async def test_unreadable_signals_and_other_dags_signals_are_skipped() -> None:
    async def handle(s: ReadinessSignal) -> None:
        raise AssertionError("never called")

    subscriber = ReadinessSubscriber("127.0.0.1:1", "daily", handle, group_id="g", ledger=MemoryLedger())
    assert await subscriber.handle(b"not json") is None
    assert await subscriber.handle(signal(dag_id="weekly")) is None
    assert subscriber.stats.unreadable == 2

