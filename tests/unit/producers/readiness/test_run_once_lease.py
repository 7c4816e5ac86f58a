"""`run_once` holds a lease around the handler: it waits while another subscriber holds the run, renews
while the handler runs, and learns (logs, reports, returns) that it lost the lease."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from assetbus.producers.readiness import (
    Claim,
    ClaimState,
    FinishResult,
    Leases,
    MemoryLedger,
    RunStatus,
    Skipped,
    SubscriberEvents,
    run_once,
)
from assetbus.schemas import Provenance, ReadinessSignal, SourceKind, TriggeringEvent
from tests.helpers import wait_for

NOW = datetime(2026, 10, 1, tzinfo=UTC)
SIGNAL = ReadinessSignal(run_id="run-1", dag_id="daily", partition_key="2026-10-01", generation=1, created_at=NOW,
                         events=[TriggeringEvent(event_id=1, asset_name="orders", timestamp=NOW,
                                                 source=Provenance(kind=SourceKind.DAG, dag_id="ingest", run_id="r1"))])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingLedger(MemoryLedger):
    def __init__(self, *, lease_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(lease_s=lease_s, clock=clock)
        self.claims = 0
        self.renewals = 0

    async def claim(self, run_id: str, consumer: str) -> Claim:
        self.claims += 1
        return await super().claim(run_id, consumer)

    async def renew(self, run_id: str, fence: int) -> bool:
        self.renewals += 1
        return await super().renew(run_id, fence)


class Losses(SubscriberEvents):
    def __init__(self) -> None:
        self.lost: list[str] = []

    def lease_lost(self, dag_id: str) -> None:
        self.lost.append(dag_id)


async def test_a_handler_longer_than_its_lease_keeps_the_run_by_renewing_it() -> None:
    ledger = CountingLedger(lease_s=0.06)

    async def slow(signal: ReadinessSignal) -> None:
        await wait_for(lambda: _at_least(ledger.renewals, 4), what="renewals", interval=0.01)
        assert (await ledger.claim(signal.run_id, "intruder")).state is ClaimState.HELD

    assert await run_once(ledger, SIGNAL, slow, "me") is RunStatus.SUCCESS
    assert ledger.outcomes == {"run-1": RunStatus.SUCCESS}


async def test_a_held_run_is_waited_for_and_skipped_once_its_holder_finishes_it() -> None:
    ledger = CountingLedger(lease_s=10)
    holder = await ledger.claim("run-1", "other")
    handled: list[str] = []

    async def handle(signal: ReadinessSignal) -> None:
        handled.append(signal.run_id)

    waiting = asyncio.create_task(run_once(ledger, SIGNAL, handle, "me"))
    await wait_for(lambda: _at_least(ledger.claims, 3), what="claims while held")
    assert not waiting.done() and handled == []
    assert await ledger.finish("run-1", holder.fence, RunStatus.SUCCESS) is FinishResult.RECORDED
    assert await asyncio.wait_for(waiting, 5) is Skipped.DUPLICATE
    assert handled == []


async def test_a_held_run_whose_holder_died_is_taken_over_once_its_lease_expires() -> None:
    clock = Clock()
    ledger = CountingLedger(lease_s=0.6, clock=clock)
    await ledger.claim("run-1", "crashed")
    handled: list[str] = []

    async def handle(signal: ReadinessSignal) -> None:
        handled.append(signal.run_id)

    waiting = asyncio.create_task(run_once(ledger, SIGNAL, handle, "me"))
    await wait_for(lambda: _at_least(ledger.claims, 3), what="claims while held")
    assert handled == []
    clock.now += 0.6
    assert await asyncio.wait_for(waiting, 5) is RunStatus.SUCCESS
    assert handled == ["run-1"] and ledger.outcomes == {"run-1": RunStatus.SUCCESS}


async def test_a_handler_that_outlives_its_lease_learns_it_and_its_outcome_is_refused(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    ledger = CountingLedger(lease_s=0.03, clock=clock)
    losses = Losses()

    async def stalled(signal: ReadinessSignal) -> None:
        clock.now += 1  # the lease lapses (a paused process, a partitioned network) ...
        assert (await ledger.claim(signal.run_id, "successor")).state is ClaimState.CLAIMED  # ... and is taken
        await wait_for(lambda: _at_least(len(losses.lost), 1), what="the refused renewal", interval=0.01)

    with caplog.at_level(logging.WARNING, logger="assetbus.readiness"):
        assert await run_once(ledger, SIGNAL, stalled, "me", losses) is Skipped.LEASE_LOST
    assert losses.lost == ["daily"]
    assert ledger.outcomes == {"run-1": RunStatus.RUNNING}  # the successor's to record
    assert any("lease (fence 1) was lost" in r.getMessage() for r in caplog.records)


async def test_an_outcome_refused_without_a_refused_renewal_still_counts_as_a_lost_lease() -> None:
    clock = Clock()
    ledger = MemoryLedger(lease_s=60, clock=clock)
    losses = Losses()

    async def quick_but_late(signal: ReadinessSignal) -> None:
        clock.now += 61
        await ledger.claim(signal.run_id, "successor")

    assert await run_once(ledger, SIGNAL, quick_but_late, "me", losses) is Skipped.LEASE_LOST
    assert losses.lost == ["daily"]


async def _at_least(value: int, expected: int) -> bool:
    return value >= expected


async def test_a_subscribers_shared_leases_renew_every_running_handler_from_one_task_that_ends_when_idle() -> None:
    ledger = CountingLedger(lease_s=0.06)
    leases = Leases(ledger)
    both_renewed = asyncio.Event()
    before = _lease_tasks()  # other tests' subscribers may still have one, ending within a turn of their lease

    async def slow(signal: ReadinessSignal) -> None:
        await asyncio.wait_for(both_renewed.wait(), 5)

    signals = [SIGNAL.model_copy(update={"run_id": run_id}) for run_id in ("run-1", "run-2")]
    handling = [asyncio.create_task(run_once(ledger, s, slow, "me", leases=leases)) for s in signals]
    await wait_for(lambda: _at_least(ledger.renewals, 4), what="renewals of both leases", interval=0.01)
    assert len(_lease_tasks() - before) == 1  # one task renews both
    both_renewed.set()
    assert await asyncio.gather(*handling) == [RunStatus.SUCCESS, RunStatus.SUCCESS]
    await wait_for(lambda: _none(_lease_tasks() - before), what="the renewal task to end", interval=0.01)

    renewed = ledger.renewals
    assert await run_once(ledger, SIGNAL.model_copy(update={"run_id": "run-3"}), _quick, "me",
                          leases=leases) is RunStatus.SUCCESS
    assert ledger.renewals == renewed  # a handler shorter than a turn is not renewed
    await leases.close()
    assert _lease_tasks() - before == set()


async def _quick(signal: ReadinessSignal) -> None:
    return None


def _lease_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == "assetbus-leases" and not task.done()}


async def _none(tasks: set[asyncio.Task[object]]) -> bool:
    return not tasks
